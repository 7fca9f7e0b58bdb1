// Package embedded runs a NATS server with JetStream inside the bot's
// process, its file store in a directory: the single-machine home of
// Herald's journal (package cluster), with no server to install or run.
// It is a package of its own because the server adds about 15 MB to a
// binary; a bot that connects to a NATS cluster does not import it.
package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	// refuses new messages. 0 means DefaultMaxStore (1 GiB).
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
	ns     *server.Server
	unlock func()
	dir    string
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
	if cfg.MaxStore <= 0 {
		cfg.MaxStore = DefaultMaxStore
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	opts := &server.Options{
		ServerName:         "herald",
		DontListen:         true,
		JetStream:          true,
		StoreDir:           dir,
		SyncAlways:         cfg.SyncAlways,
		JetStreamMaxStore:  cfg.MaxStore,
		JetStreamMaxMemory: cfg.MaxMemory,
		NoSigs:             true,
		NoLog:              cfg.Logger == nil,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if cfg.Logger != nil {
		ns.SetLoggerV2(zapLogger{cfg.Logger.Sugar()}, false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		ns.Shutdown()
		ns.WaitForShutdown()
		unlock()
		return nil, fmt.Errorf("embedded: the server was not ready within %v", cfg.ReadyTimeout)
	}
	return &Server{ns: ns, unlock: unlock, dir: dir}, nil
}

// Dir returns the store's directory, as an absolute path.
func (s *Server) Dir() string { return s.dir }

// Connect returns a client connection to the server, in process (no
// socket), with opts after its own.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("herald")}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded: connect: %w", err)
	}
	return nc, nil
}

// Shutdown stops the server, closing its clients' connections, and waits
// until it has stopped and its store is written; the directory is then
// free. It may be called more than once.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	s.unlock()
}

// zapLogger is the server's logger on zap. The server's Fatalf is logged
// at error level: a library must not end the process.
type zapLogger struct{ s *zap.SugaredLogger }

func (l zapLogger) Noticef(format string, v ...any) { l.s.Infof("nats: "+format, v...) }
func (l zapLogger) Warnf(format string, v ...any) {
	if expectedAfterCrash(format) {
		l.s.Infof("nats: "+format, v...)
		return
	}
	l.s.Warnf("nats: "+format, v...)
}

// expectedAfterCrash reports whether the server's warning format is one
// it gives every time it opens a store that was not closed cleanly (a
// SIGKILL, a power loss): the store's state file is older than its
// blocks, and the server rebuilds it from them. That is the recovery
// working, not a failure, so it is logged at info level.
func expectedAfterCrash(format string) bool {
	return strings.Contains(format, "Stream state outdated") ||
		strings.Contains(format, "state is outdated; attempting to recover")
}
func (l zapLogger) Fatalf(format string, v ...any) { l.s.Errorf("nats: "+format, v...) }
func (l zapLogger) Errorf(format string, v ...any) { l.s.Errorf("nats: "+format, v...) }
func (l zapLogger) Debugf(format string, v ...any) { l.s.Debugf("nats: "+format, v...) }
func (l zapLogger) Tracef(format string, v ...any) {}
