// Package embedded runs a NATS server with JetStream inside the bot's
// process, its file store in a directory: the single-machine home of
// Herald's journal (package cluster), with no server to install or run.
// It is a package of its own because the server adds about 15 MB to a
// binary; a bot that connects to a NATS cluster does not import it.
//
// A full disk is an outage the server lives through without a restart.
// Its store is bounded under the disk's room (Config.MaxStore), so that
// it refuses new messages cleanly — the journal then refuses events and
// sends until what it holds is done — before the disk is full. If the
// disk fills anyway (another program writes to it), the store's writes
// fail and nats-server leaves the streams failed until they are loaded
// again; the Server sees it, turns JetStream off (every call then fails
// at once), and once there is room starts the server again, its streams
// loaded from the disk, while the connections from Connect reconnect to
// it by themselves: one log line each way. One case it cannot live
// through: nats-server (2.15) can deadlock when the disk fills while it
// compacts a stream (a purge), and its JetStream then never stops; see
// [Server.Stuck].
package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// ErrLocked is returned by [Start] when another process (or another
// Server of this one) already uses the directory.
var ErrLocked = errors.New("embedded: the data directory is in use by another process")

// Defaults for the zero fields of [Config].
const (
	DefaultMaxStore     = 1 << 30 // 1 GiB
	DefaultMaxMemory    = 64 << 20
	DefaultReadyTimeout = 30 * time.Second
)

// Config configures [Start]. Only Dir is required; the zero value of every
// other field means its documented default.
type Config struct {
	// Dir is the directory of the server's file store, created (mode 0700)
	// if missing. One Server at a time may use it: Start locks it.
	Dir string

	// SyncAlways makes the store write every message to the disk (fsync)
	// before it is acknowledged, so what was journaled survives a power
	// loss; a publish then costs about ten times as much. False (the
	// default) syncs every two minutes and at a clean shutdown: that
	// survives the end of the process (a crash, SIGKILL, the OOM killer),
	// as the operating system still writes the data, but not a power loss
	// or a kernel crash.
	SyncAlways bool

	// MaxStore bounds the bytes JetStream keeps on disk; a full store
	// refuses new messages. 0 means DefaultMaxStore (1 GiB). Start
	// bounds it further, where it can tell the disk's free space, to
	// three quarters of what the store holds and the disk has free
	// together (see Server.MaxStore), so that the store refuses before
	// the disk is full: the rest is room for the store's own files
	// (indexes, consumers' state, blocks rewritten when compacted).
	MaxStore int64

	// MaxMemory bounds the memory JetStream uses for memory-backed
	// streams. 0 means DefaultMaxMemory (64 MiB).
	MaxMemory int64

	// ReadyTimeout bounds how long Start waits for the server to be ready.
	// 0 means DefaultReadyTimeout (30 s: recovering a large store takes
	// time).
	ReadyTimeout time.Duration

	// Logger receives the server's notices, warnings and errors. Nil
	// means none.
	Logger *zap.Logger
}

// Server is a running embedded NATS server. Its methods are safe for
// concurrent use.
type Server struct {
	ns       atomic.Pointer[server.Server] // the server running now
	unlock   func()
	dir      string
	cfg      Config
	log      *zap.Logger
	maxStore atomic.Int64

	// failed is signalled when the server says its store could not
	// write (see watch); quit and watched end the watch.
	failed  chan struct{}
	quit    chan struct{}
	watched chan struct{}
	stop    sync.Once

	// stuck is closed when JetStream has not stopped stopSlow after the
	// store failed (see Stuck).
	stuck     chan struct{}
	stuckOnce sync.Once

	// conns are the connections Connect made and not closed yet, which
	// Shutdown closes: they would reconnect for ever.
	mu    sync.Mutex
	conns []*nats.Conn
}

// withDefaults returns c with each setting left unset given its default
// (a nil Logger stays nil: the server then logs nothing at all).
func (c Config) withDefaults() Config {
	if c.MaxStore <= 0 {
		c.MaxStore = DefaultMaxStore
	}
	if c.MaxMemory <= 0 {
		c.MaxMemory = DefaultMaxMemory
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = DefaultReadyTimeout
	}
	return c
}

// Start starts a NATS server with JetStream whose store is in cfg.Dir. The
// server listens on no port: connect to it with [Server.Connect]. Start
// returns [ErrLocked] when the directory is in use, and an error wrapping
// the cause when the server cannot start (a store it cannot read, a
// timeout).
func Start(cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("embedded: no directory")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	s := &Server{unlock: unlock, dir: dir, cfg: cfg, log: log,
		failed: make(chan struct{}, 1), quit: make(chan struct{}), watched: make(chan struct{}), stuck: make(chan struct{})}
	ns, err := s.start()
	if err != nil {
		unlock()
		return nil, err
	}
	s.ns.Store(ns)
	go s.watch()
	return s, nil
}

// start starts a server on the store, its MaxStore set under the disk's
// room, and waits until it is ready.
func (s *Server) start() (*server.Server, error) {
	limit := storeLimit(s.dir, s.cfg.MaxStore)
	ns, err := server.NewServer(&server.Options{
		ServerName:         "herald",
		DontListen:         true,
		JetStream:          true,
		StoreDir:           s.dir,
		SyncAlways:         s.cfg.SyncAlways,
		JetStreamMaxStore:  limit,
		JetStreamMaxMemory: s.cfg.MaxMemory,
		NoSigs:             true,
		NoLog:              s.cfg.Logger == nil,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	// Always a logger: the server's errors tell when its store could not
	// write.
	ns.SetLoggerV2(zapLogger{s: s.log.Sugar(), failed: s.noteFailure}, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(s.cfg.ReadyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		return nil, fmt.Errorf("embedded: the server was not ready within %v", s.cfg.ReadyTimeout)
	}
	s.maxStore.Store(limit)
	return ns, nil
}

// MaxStore returns the bytes the store may hold now: Config.MaxStore, or
// less where the disk has less room (see Config.MaxStore). It is set at
// Start, and again each time the server starts again after the disk was
// full.
func (s *Server) MaxStore() int64 { return s.maxStore.Load() }

// storeLimit returns max, or three quarters of the bytes the store in dir
// holds and its disk has free together if that is less (and the disk's
// free space can be told).
func storeLimit(dir string, max int64) int64 {
	free, ok := diskFree(dir)
	if !ok {
		return max
	}
	return min(max, (dirSize(dir)+free)/4*3)
}

// dirSize returns the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // what cannot be read counts for nothing
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// noteFailure signals the watch that the store could not write.
func (s *Server) noteFailure() {
	select {
	case s.failed <- struct{}{}:
	default:
	}
}

// Timings of the watch.
const (
	// roomEvery is the heartbeat on which the disk's room is looked at
	// while JetStream is off for a full disk.
	roomEvery = time.Second
	// roomNeeded is the free space JetStream waits for before it comes
	// back, when the disk's free space can be told; without, it comes
	// back after noRoomWait.
	roomNeeded = 4 << 20
	noRoomWait = 10 * time.Second
)

// watch turns JetStream off when the store could not write (its disk is
// full), and starts the server again once there is room, until Shutdown.
// (nats-server's own EnableJetStream after ShutdownJetStream races with
// the requests it is serving: a new server is the clean way back.)
func (s *Server) watch() {
	defer close(s.watched)
	for {
		select {
		case <-s.quit:
			return
		case <-s.failed:
		}
		off := time.Now()
		// Off at once, so that calls fail fast meanwhile: a stream whose
		// store failed stays failed until it is loaded again. Logged once
		// off: a write after the line is refused.
		old := s.ns.Load()
		s.stopJetStream(old.ShutdownJetStream)
		s.log.Warn("embedded: the store could not write (its disk is full?); JetStream is off until there is room",
			zap.String("dir", s.dir))
		if !s.waitRoom() {
			return
		}
		old.Shutdown()
		old.WaitForShutdown()
		drain(s.failed)
		ns, err := s.start()
		for err != nil {
			s.log.Error("embedded: the server did not start again; trying again", zap.Error(err))
			if !s.waitRoom() {
				return
			}
			ns, err = s.start()
		}
		s.ns.Store(ns)
		s.log.Info("embedded: room on the disk again; JetStream is back", zap.Duration("after", time.Since(off).Round(time.Millisecond)),
			zap.Int64("max_store", s.maxStore.Load()))
	}
}

// stopSlow is how long the watch waits for JetStream to stop before it
// says it still waits: a server that does not stop answers nothing
// meanwhile, and the journal's calls only time out.
const stopSlow = 30 * time.Second

// stopJetStream runs stop (the server's ShutdownJetStream) and waits for
// it, logging an error if it failed, and one if it has not returned after
// stopSlow.
func (s *Server) stopJetStream(stop func() error) {
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	slow := time.NewTimer(stopSlow)
	defer slow.Stop()
	var err error
	select {
	case err = <-stopped:
	case <-slow.C:
		s.log.Error("embedded: JetStream has not stopped since the store could not write: the server is stuck, and "+
			"nothing more can be recorded in this process; the process should end and start again (what the store "+
			"acknowledged is on the disk)",
			zap.Duration("waited", stopSlow), zap.String("dir", s.dir))
		s.stuckOnce.Do(func() { close(s.stuck) })
		err = <-stopped
	}
	if err != nil {
		s.log.Error("embedded: JetStream did not stop", zap.Error(err))
	}
}

// waitRoom waits, on a heartbeat, until the disk has room for the store
// again; it returns false if Shutdown came first.
func (s *Server) waitRoom() bool {
	beat := time.NewTicker(roomEvery) // heartbeat: the disk's room looked at while JetStream is off
	defer beat.Stop()
	start := time.Now()
	for {
		select {
		case <-s.quit:
			return false
		case <-beat.C:
		}
		if free, ok := diskFree(s.dir); ok && free >= roomNeeded || !ok && time.Since(start) >= noRoomWait {
			return true
		}
	}
}

// drain forgets a signal sent on c.
func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// Stuck returns a channel closed when the server's JetStream has not
// stopped 30 s after its store could not write. nats-server can deadlock
// when the disk fills while it compacts a stream (as the journal's purges
// do): the stream's lock is never released, its JetStream cannot stop, and
// the server can neither record nor shut down. Nothing brings it back in
// this process: the process should end — without waiting for a clean stop
// of what records through the server, which would wait in vain — and start
// again once there is room; what the store acknowledged is on the disk and
// is taken up, as after a crash. The example bot exits with code 1. A
// Shutdown of a stuck server closes the connections and returns without
// waiting for the server; the directory stays locked until the process
// ends.
func (s *Server) Stuck() <-chan struct{} { return s.stuck }

// Dir returns the store's directory, as an absolute path.
func (s *Server) Dir() string { return s.dir }

// Connect returns a client connection to the server, in process (no
// socket), with opts after its own. The connection reconnects by itself,
// for ever, to the server started again after a full disk (see the
// package's doc).
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(running{s}), nats.Name("herald"),
		nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond)}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = slices.DeleteFunc(s.conns, (*nats.Conn).IsClosed)
	s.conns = append(s.conns, nc)
	return nc, nil
}

// Shutdown stops the server, closing its clients' connections, and waits
// until it has stopped and its store is written; the directory is then
// free. It may be called more than once.
func (s *Server) Shutdown() {
	s.stop.Do(func() { close(s.quit) })
	stuck := false
	select {
	case <-s.watched:
	default:
		select {
		case <-s.watched:
		case <-s.stuck:
			stuck = true
		}
	}
	s.mu.Lock()
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, nc := range conns {
		nc.Close()
	}
	if stuck {
		return // its shutdown would wait for the stream it cannot stop
	}
	ns := s.ns.Load()
	ns.Shutdown()
	ns.WaitForShutdown()
	s.unlock()
}

// running connects to the server running now: a connection lost when the
// server starts again reconnects to the new one.
type running struct{ s *Server }

// InProcessConn implements nats.InProcessConnProvider.
func (r running) InProcessConn() (net.Conn, error) {
	select {
	case <-r.s.quit:
		return nil, errors.New("embedded: the server is shut down")
	default:
	}
	return r.s.ns.Load().InProcessConn()
}

// zapLogger is the server's logger on zap. The server's Fatalf is logged
// at error level: a library must not end the process. failed, if not nil,
// is called for an error that says the store could not write.
type zapLogger struct {
	s      *zap.SugaredLogger
	failed func()
}

func (l zapLogger) Noticef(format string, v ...any) { l.s.Infof("nats: "+format, v...) }
func (l zapLogger) Warnf(format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	if expectedAfterCrash(line) {
		l.s.Info("nats: " + line)
		return
	}
	l.s.Warn("nats: " + line)
}

// expectedAfterCrash reports whether the server's warning line is one it
// gives every time it opens a store that was not closed cleanly (a
// SIGKILL, a power loss): the store's state file is older than its
// blocks ("prior state file"), and the server rebuilds it from them. That
// is the recovery working, not a failure, so it is logged at info level.
func expectedAfterCrash(line string) bool {
	return strings.Contains(line, "Stream state outdated") ||
		strings.Contains(line, "state is outdated; attempting to recover") ||
		strings.Contains(line, "Recovering stream state from index errored: prior state file")
}
func (l zapLogger) Fatalf(format string, v ...any) { l.s.Errorf("nats: "+format, v...) }
func (l zapLogger) Errorf(format string, v ...any) {
	if l.failed != nil && writeFailure(fmt.Sprintf(format, v...)) {
		l.failed()
	}
	l.s.Errorf("nats: "+format, v...)
}

// writeFailure reports whether the server's error line says its store
// could not write: a stream or its file store failed (nats-server keeps
// it failed until it is loaded again), or JetStream is off for want of
// room.
func writeFailure(line string) bool {
	l := strings.ToLower(line)
	return strings.Contains(l, "critical write error") || strings.Contains(l, "no space left") ||
		strings.Contains(l, "will be disabled")
}
func (l zapLogger) Debugf(format string, v ...any) { l.s.Debugf("nats: "+format, v...) }
func (l zapLogger) Tracef(format string, v ...any) {}
