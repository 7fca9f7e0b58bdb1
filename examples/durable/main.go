// Command durable is a bot that a crash changes nothing for: its journal,
// sessions and jobs are kept on NATS JetStream, embedded in the process
// with its store in DATA_DIR (default ./herald-data). /add counts, per
// user, exactly once however the bot is stopped or killed; /greet asks a
// name and waits for it across restarts. It runs on Telegram with
// TELEGRAM_BOT_TOKEN, else on the browser chat:
//
//	DATA_DIR=/var/lib/mybot TELEGRAM_BOT_TOKEN=123456:ABC... go run ./examples/durable
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/telegram"
	"github.com/heraldbot/herald/adapters/webchat"
	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

func main() {
	log, err := zap.NewDevelopment(zap.AddStacktrace(zap.ErrorLevel))
	if err == nil {
		err = run(log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable:", err)
		os.Exit(1)
	}
}

func run(log *zap.Logger) error {
	var a platform.Adapter
	var err error
	if token := os.Getenv("TELEGRAM_BOT_TOKEN"); token != "" {
		a, err = telegram.New(telegram.Config{Token: token, Logger: log})
	} else {
		a, err = webchat.New(webchat.Config{Logger: log})
	}
	if err != nil {
		return err
	}
	dir := os.Getenv("DATA_DIR")
	if dir == "" {
		dir = "herald-data"
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx, a, dir, log)
}

// serve runs a bot on a with its journal, sessions and schedule in dir
// until ctx ends, and stops in order: the engine (which sends every
// pending reply, or records what it could not), then the connection, then
// the server.
func serve(ctx context.Context, a platform.Adapter, dir string, log *zap.Logger) (err error) {
	srv, err := embedded.Start(embedded.Config{Dir: dir, Logger: log.Named("nats")})
	if err != nil {
		return err
	}
	defer srv.Shutdown() // last
	nc, err := srv.Connect()
	if err != nil {
		return err
	}
	defer nc.Close() // after Run returned

	cc := cluster.Config{}
	j, err := cluster.Open(ctx, nc, cc)
	if err != nil {
		return err
	}
	sessions, err := cluster.NewSessionStore(ctx, nc, cc)
	if err != nil {
		return err
	}
	schedule, err := cluster.NewScheduleStore(ctx, nc, cc)
	if err != nil {
		return err
	}
	e, err := engine.New(engine.WithAdapter(a), engine.WithLogger(log),
		engine.WithJournal(j), engine.WithSessionStore(sessions), engine.WithScheduleStore(schedule),
		engine.WithOnError(func(c *engine.Context, err error) { c.ReplyError(err) }))
	if err != nil {
		return err
	}
	register(e)
	return e.Run(ctx)
}

// count is each user's count, in the session store.
var count = engine.NewUserSession[int]("count", 0)

// register adds the bot's handlers.
func register(e *engine.Engine) {
	e.OnCommand("add", func(c *engine.Context) error {
		// Update returns what it wrote: run again after a crash, the
		// handler gets the same number, and counts once.
		n, err := count.Update(c, func(n *int) error { *n++; return nil })
		if err != nil {
			return err
		}
		c.ReplyText(fmt.Sprint(n))
		return nil
	}, engine.Description("add one to your count"))
	e.OnCommand("greet", func(c *engine.Context) error {
		name, err := c.Prompt(c.Context(), platform.TextMessage("What is your name?"))
		if errors.Is(err, engine.ErrCancelled) {
			return nil
		}
		if err != nil {
			return err // ErrWaiting while it waits: return it, as any error
		}
		c.ReplyText("Hello, " + name.Text + "!")
		return nil
	}, engine.Description("a conversation that survives restarts"))
}
