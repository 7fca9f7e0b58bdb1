// Command bot is Herald's example bot: the ping, echo, count, menu, greet,
// note, remind, fileecho, help and stats plugins on every configured
// platform.
//
// With no configuration it serves a chat page on http://127.0.0.1:8080/ and
// prints the URL to open. Each setting is an environment variable and an
// equal command-line flag (flags win); run with -h for the list:
//
//	TELEGRAM_BOT_TOKEN       enables Telegram (long polling by default)
//	TELEGRAM_API_ENDPOINT    Bot API endpoint format ("https://api.telegram.org/bot%s/%s")
//	TELEGRAM_WEBHOOK_URL     public URL: receive updates by webhook instead
//	TELEGRAM_WEBHOOK_LISTEN  address the webhook server listens on
//	TELEGRAM_WEBHOOK_SECRET  secret Telegram sends with each update
//	TELEGRAM_BOT_USERNAME    the bot's username (for /cmd@name on processes that only receive webhooks)
//	TELEGRAM_AVOID_DUPLICATES  true: dead-letter an ambiguous failure instead of sending again
//	ONEBOT_WS_LISTEN         accept OneBot v11 reverse WebSocket connections here
//	ONEBOT_WS_URL            or dial a OneBot v11 implementation (forward WebSocket)
//	ONEBOT_ACCESS_TOKEN      OneBot access token
//	ONEBOT_AVOID_DUPLICATES  true: dead-letter an ambiguous failure instead of sending again
//	WEBCHAT_ADDR             browser chat address (default 127.0.0.1:8080; "off" to disable)
//	METRICS_ADDR             serve Prometheus /metrics and the dead letters here (off by default)
//	LOG_FORMAT               console (default) or json
//	SHUTDOWN_TIMEOUT         grace period for pending replies on SIGINT/SIGTERM (default 30s)
//	DATA_DIR                 the journal's directory (default $XDG_STATE_HOME/herald; "off": memory only)
//	DATA_SYNC                default, or always (sync every write: survives a power loss)
//	NATS_URL                 keep the journal on this NATS server or cluster instead, shared
//	                         by the bot's processes there: run several for one bot
//	HERALD_BOT               the bot's name in NATS (default herald)
//	HERALD_NODE              with NATS_URL: this process's name (default host-pid)
//	GOMEMLIMIT               the Go runtime's soft memory limit (default here 80MiB)
//
// A bad setting stops the bot with one line naming it and exit code 2. On
// SIGINT or SIGTERM the bot stops taking events, sends every pending reply
// (for at most SHUTDOWN_TIMEOUT, then cancels the rest) and exits: 0 after a
// clean drain, 1 otherwise.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/heraldbot/herald/adapters/onebot"
	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/internal/httpserve"
	"github.com/heraldbot/herald/internal/ratelog"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
	"github.com/heraldbot/herald/plugins/count"
	"github.com/heraldbot/herald/plugins/echo"
	"github.com/heraldbot/herald/plugins/fileecho"
	"github.com/heraldbot/herald/plugins/greet"
	"github.com/heraldbot/herald/plugins/help"
	"github.com/heraldbot/herald/plugins/menu"
	"github.com/heraldbot/herald/plugins/note"
	"github.com/heraldbot/herald/plugins/ping"
	"github.com/heraldbot/herald/plugins/remind"
	"github.com/heraldbot/herald/plugins/stats"
	"github.com/heraldbot/herald/plugins/tally"
)

// defaultMemoryLimit is the soft memory limit the bot runs under when
// GOMEMLIMIT is not set: files a flood of uploads passes through the
// journal leave garbage (and the embedded server's block caches) that the
// collector would otherwise let grow to twice the live heap, and keep
// until its next forced cycle, minutes later. The bot's live heap is a
// few tens of MiB at most outside such floods, where the limit binds
// nothing; under a flood of 4 MiB uploads from 60 tabs the peak was 222–225
// MiB with 96 MiB, 263–268 MiB with 128 MiB and 340 MiB with 256 MiB, in
// the same time, while the browser chat kept its 64 MiB of files in
// memory; with its files on disk, 138–162 MiB with 96 MiB and 129–141 MiB
// with 80 MiB (see TestFloodMemory), the flood taking 14–19 s instead of
// 14 s.
const defaultMemoryLimit = 80 << 20

func main() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; it returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bot: %v\n", err)
		return 2
	}
	log, err := newLogger(cfg.logFormat, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "bot: LOG_FORMAT: %v\n", err)
		return 2
	}
	defer log.Sync() //nolint:errcheck // nothing to do if stderr fails

	if err := serve(ctx, cfg, log, stdout); err != nil {
		if errors.Is(err, embedded.ErrLocked) {
			fmt.Fprintf(stderr, "bot: DATA_DIR %s is in use by another bot: stop it, or give this one another DATA_DIR\n", cfg.dataDir)
			return 2
		}
		log.Error("bot stopped", zap.Error(err))
		return 1
	}
	return 0
}

// durability is what keeps the bot's events, replies and state: the
// engine options that install it, and release, which frees it once the
// engine has stopped. shared is set when the bot may run as several
// processes (NATS_URL).
type durability struct {
	opts    []engine.Option
	shared  *cluster.Shared
	release func()
	// stuck, with the embedded server, is closed when it is stuck (see
	// embedded.Server.Stuck); nil otherwise.
	stuck <-chan struct{}
}

// openDurability opens what the configuration asks for: a journal,
// sessions and the schedule on the embedded NATS server in DATA_DIR, the
// same shared by the bot's processes on the server at NATS_URL, or
// nothing (memory only).
func openDurability(ctx context.Context, cfg config, log *zap.Logger) (d durability, err error) {
	var nc *nats.Conn
	var srv *embedded.Server
	switch {
	case cfg.natsURL != "":
		nc, err = nats.Connect(cfg.natsURL, nats.Name("herald"), nats.MaxReconnects(-1),
			nats.DisconnectErrHandler(func(c *nats.Conn, err error) {
				if !c.IsClosed() { // not our own Close at the stop
					log.Warn("NATS connection lost; reconnecting", zap.Error(err))
				}
			}),
			nats.ReconnectHandler(func(*nats.Conn) { log.Info("NATS connection back") }))
		if err != nil {
			return d, fmt.Errorf("NATS_URL: %w", err)
		}
		log.Info("keeping the journal on NATS, shared with the bot's other processes", zap.Strings("servers", nc.Servers()))
	case cfg.dataDir != "":
		srv, err = embedded.Start(embedded.Config{Dir: cfg.dataDir, SyncAlways: cfg.dataSyncAlways,
			Logger: log.Named("nats").WithOptions(zap.IncreaseLevel(zap.WarnLevel))})
		if err != nil {
			return d, err
		}
		if nc, err = srv.Connect(); err != nil {
			srv.Shutdown()
			return d, err
		}
		log.Info("keeping the journal in DATA_DIR (DATA_DIR=off keeps everything in memory)",
			zap.String("data_dir", srv.Dir()), zap.Bool("sync_always", cfg.dataSyncAlways))
	default:
		log.Info("no journal: events, replies, sessions and reminders are kept in memory only (DATA_DIR=off)")
		return durability{release: func() {}}, nil
	}
	d.release = func() {
		nc.Close()
		if srv != nil {
			srv.Shutdown()
		}
	}
	if srv != nil {
		d.stuck = srv.Stuck()
	}
	defer func() {
		if err != nil {
			d.release()
		}
	}()
	cc := cluster.Config{Bot: cfg.botName, Logger: log.Named("journal")}
	var j journal.Journal
	if srv == nil {
		d.shared, err = cluster.OpenShared(ctx, nc, cluster.SharedConfig{Config: cc, Node: cfg.nodeName, Logger: log.Named("cluster")})
		j = d.shared
	} else {
		j, err = cluster.Open(ctx, nc, cc)
	}
	if err != nil {
		return d, err
	}
	sessions, err := cluster.NewSessionStore(ctx, nc, cc)
	if err != nil {
		return d, err
	}
	schedule, err := cluster.NewScheduleStore(ctx, nc, cc)
	if err != nil {
		return d, err
	}
	d.opts = []engine.Option{engine.WithJournal(j), engine.WithSessionStore(sessions), engine.WithScheduleStore(schedule)}
	return d, nil
}

func serve(ctx context.Context, cfg config, log *zap.Logger, stdout io.Writer) error {
	opts := []engine.Option{
		engine.WithLogger(log),
		engine.WithShutdownTimeout(cfg.shutdownTimeout),
		// A handler's error is logged; the user is told something went
		// wrong (a UserError's own text, if it has one). The hook's reply
		// never takes the place of one of the handler's own.
		engine.WithOnError(func(c *engine.Context, err error) { c.ReplyError(err) }),
		// /cancel leaves any conversation (/greet's questions, say).
		engine.WithCancelCommand("cancel", "Cancelled."),
		// Telegram's adapter publishes its budget, which the engine
		// applies by default; the other platforms publish none.
	}

	var web *webchat.Adapter
	if cfg.webchatAddr != "" {
		a, err := webchat.New(webchat.Config{Addr: cfg.webchatAddr, Logger: log.Named("webchat")})
		if err != nil {
			return err
		}
		web = a
		opts = append(opts, engine.WithAdapter(a))
	}
	if cfg.telegramToken != "" {
		tc := telegram.Config{
			Token:           cfg.telegramToken,
			APIEndpoint:     cfg.telegramEndpoint,
			AvoidDuplicates: cfg.telegramAvoidDups,
			Username:        cfg.telegramUsername,
			Logger:          log.Named("telegram"),
		}
		if cfg.telegramWebhookURL != "" {
			tc.Mode = telegram.Webhook
			tc.Webhook = telegram.WebhookConfig{
				Listen:      cfg.telegramWebhookListen,
				URL:         cfg.telegramWebhookURL,
				SecretToken: cfg.telegramWebhookSecret,
			}
		}
		a, err := telegram.New(tc)
		if err != nil {
			return err
		}
		opts = append(opts, engine.WithAdapter(a))
		if cfg.telegramNoLimits {
			opts = append(opts, engine.WithRateLimit(a.Name(), sender.RateLimitConfig{Off: true}))
		}
	}
	if cfg.onebotListen != "" || cfg.onebotURL != "" {
		oc := onebot.Config{Listen: cfg.onebotListen, URL: cfg.onebotURL, AccessToken: cfg.onebotToken,
			AvoidDuplicates: cfg.onebotAvoidDups, Logger: log.Named("onebot")}
		if cfg.onebotURL != "" {
			oc.Mode = onebot.Forward
		}
		a, err := onebot.New(oc)
		if err != nil {
			return err
		}
		opts = append(opts, engine.WithAdapter(a))
	}

	var metricsSrv *httpserve.Server
	var metricsMux *http.ServeMux
	var reg *prometheus.Registry
	if cfg.metricsAddr != "" {
		reg = prometheus.NewRegistry()
		if err := errors.Join(
			reg.Register(collectors.NewGoCollector()),
			reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})),
		); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		m, err := sender.NewMetrics(reg)
		if err != nil {
			return err
		}
		opts = append(opts, engine.WithMetrics(m))
		ln, err := net.Listen("tcp", cfg.metricsAddr)
		if err != nil {
			return fmt.Errorf("METRICS_ADDR: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
		metricsMux = mux // and the dead letters, once the engine is made
		// A scraper needs few connections; a flood of idle ones is
		// evicted rather than left to take the bot's file descriptors.
		metricsSrv = httpserve.New(mux, httpserve.Limits{MaxConns: 16, WriteTimeout: 30 * time.Second},
			stdlog.New(serverLog{ratelog.New(log, 0)}, "", 0))
		go func() {
			if err := metricsSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server failed", zap.Error(err))
			}
		}()
		log.Info("serving metrics", zap.String("url", "http://"+ln.Addr().String()+"/metrics"))
	}

	dur, err := openDurability(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer dur.release()
	if dur.stuck != nil {
		served := make(chan struct{})
		defer close(served)
		go exitWhenStuck(dur.stuck, served, log)
	}
	opts = append(opts, dur.opts...)
	if dur.shared != nil && reg != nil {
		if err := reg.Register(dur.shared.Collector()); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}

	e, err := engine.New(opts...)
	if err != nil {
		return err
	}
	if err := e.Use(ping.New(), echo.New(), count.New(), menu.New(), greet.New(), tally.New(), note.New(), remind.New(), fileecho.New(), help.New(), stats.New()); err != nil {
		return err
	}

	if metricsMux != nil {
		host, _, _ := net.SplitHostPort(cfg.metricsAddr)
		deadLetterRoutes(metricsMux, e, host)
	}
	if cfg.deadLettersFile != "" {
		// A reply that may have arrived is not sent again where the
		// operator asked for at most once.
		hold := func(dl sender.DeadLetter) bool {
			if !errors.Is(dl.Err, platform.ErrMaybeDelivered) {
				return false
			}
			switch dl.Request.Platform {
			case telegram.DefaultName:
				return cfg.telegramAvoidDups
			case onebot.DefaultName:
				return cfg.onebotAvoidDups
			}
			return false
		}
		if err := replayDeadLetters(ctx, e, cfg.deadLettersFile, log, hold); err != nil {
			return err
		}
	}

	announced := make(chan struct{})
	if web != nil {
		go func() {
			defer close(announced)
			select {
			case <-web.Ready():
				fmt.Fprintf(stdout, "Herald is running: open %s in your browser to chat with the bot.\n", web.URL())
			case <-ctx.Done():
			}
		}()
	} else {
		close(announced)
	}

	runErr := e.Run(ctx)
	<-announced
	if metricsSrv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = metricsSrv.HTTP.Shutdown(sctx)
		cancel()
	}
	if cfg.deadLettersFile != "" {
		if err := saveDeadLetters(e, cfg.deadLettersFile, log); err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	st := e.Stats()
	if runErr != nil {
		log.Error("shutdown was not clean",
			zap.Int("replies_pending", st.Outbound.Queued+st.Outbound.Running+st.Outbound.Waiting),
			zap.Int("dead_letters", st.DeadLetters))
		return runErr
	}
	if st.DeadLetters > 0 {
		log.Warn("some replies could not be delivered", zap.Int("dead_letters", st.DeadLetters))
	}
	log.Info("stopped cleanly", zap.Uint64("replies_delivered", st.Sends.Delivered))
	return nil
}

// exitWhenStuck ends the process with code 1 when the embedded server is
// stuck (before served is closed): it can record nothing more, nor stop,
// and a clean stop would wait for it in vain; a supervisor (systemd,
// Docker's restart policy) starts the bot again, which takes up what the
// store acknowledged, as after a crash.
func exitWhenStuck(stuck, served <-chan struct{}, log *zap.Logger) {
	select {
	case <-stuck:
		log.Error("bot: the embedded NATS server is stuck; exiting with code 1 to be started again (what it recorded stays in DATA_DIR)")
		_ = log.Sync()
		os.Exit(1)
	case <-served:
	}
}

func newLogger(format string, w io.Writer) (*zap.Logger, error) {
	var enc zapcore.Encoder
	switch format {
	case "json":
		enc = zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	case "console":
		ec := zap.NewDevelopmentEncoderConfig()
		ec.EncodeTime = zapcore.TimeEncoderOfLayout("15:04:05.000")
		enc = zapcore.NewConsoleEncoder(ec)
	default:
		return nil, fmt.Errorf("unknown format %q", format)
	}
	core := zapcore.NewCore(enc, zapcore.Lock(zapcore.AddSync(w)), zap.InfoLevel)
	return zap.New(core, zap.AddCaller()), nil
}

// serverLog writes the metrics server's own errors and the connections it
// closed at its cap as warnings, at most one an interval, then counted.
type serverLog struct{ rl *ratelog.Logger }

func (l serverLog) Write(p []byte) (int, error) {
	l.rl.Warn("metrics server", zap.String("error", strings.TrimSpace(string(p))))
	return len(p), nil
}
