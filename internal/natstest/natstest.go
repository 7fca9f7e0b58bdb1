// Package natstest runs NATS servers with JetStream for tests, each in a
// process of its own built from the nats-server module this one requires.
//
// A server in the test's own process is built as the test is: under
// `go test -race` every memory access of the server is checked, which
// makes it several times as slow as in production. That is most of the
// CPU of a test whose own process runs little but the server (the example
// bot's end-to-end tests, whose bots are processes of their own); where
// the test process runs Herald's engines too, they are the larger share.
// A server in its own process runs as operators run it, and a test can
// kill it (SIGKILL) as a crash would. Tests of code that starts its
// server in-process (package embedded, the default journal) keep testing
// that code.
package natstest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/heraldbot/herald/internal/testport"
)

// Options configures [Start]. The zero value is a server with the
// defaults below.
type Options struct {
	// Dir is the directory of the server's store; "" means a new
	// directory of the test's (t.TempDir).
	Dir string

	// Port is the port the server listens on, on 127.0.0.1; 0 means one
	// from [testport.Port].
	Port int

	// MaxStore bounds the bytes JetStream keeps on disk
	// (max_file_store); 0 means 1 GiB.
	MaxStore int64
}

// startTries is how many times start tries to run a binary that another
// go command is still writing, 50 ms apart.
const startTries = 40

// readyTimeout bounds how long Start and Restart wait for the server to
// accept connections (a large store takes time to recover).
const readyTimeout = time.Minute

// Server is a NATS server process a test started.
type Server struct {
	t    testing.TB
	opts Options
	conf string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *bytes.Buffer // the server's output, of every run
}

// Start starts a server and stops it when the test ends. It fails the test
// if the server cannot be built or does not become ready. The server runs
// on one processor unless the environment sets GOMAXPROCS (see serverEnv).
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Port == 0 {
		opts.Port = testport.Port(t)
	}
	if opts.MaxStore == 0 {
		opts.MaxStore = 1 << 30
	}
	s := &Server{t: t, opts: opts, log: new(bytes.Buffer)}
	if err := s.writeConfig(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("the NATS server's log:\n%s", s.Log())
		}
	})
	s.start()
	return s
}

// URL returns the server's client URL.
func (s *Server) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.opts.Port) }

// Port returns the port the server listens on.
func (s *Server) Port() int { return s.opts.Port }

// Connect connects to the server; with no options given, the connection
// reconnects, as a bot's does, across the server's restarts.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	if len(opts) == 0 {
		opts = []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), nats.ReconnectJitter(0, 0)}
	}
	return nats.Connect(s.URL(), opts...)
}

// Log returns what the server has written to its standard error.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// Stop stops the server cleanly (SIGTERM: its store flushed) and waits
// for its process to end. Stopping a stopped server does nothing.
func (s *Server) Stop() { s.end(syscall.SIGTERM) }

// Kill kills the server (SIGKILL), as a crash or the OOM killer would, and
// waits for its process to end.
func (s *Server) Kill() { s.end(syscall.SIGKILL) }

// Restart starts the server again, on the same store and port, after Stop
// or Kill.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

func (s *Server) end(sig os.Signal) {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *Server) writeConfig() error {
	conf := fmt.Sprintf(`server_name: natstest
listen: 127.0.0.1:%d
jetstream {
  store_dir: %s
  max_file_store: %d
  max_memory_store: %d
}
`, s.opts.Port, strconv.Quote(s.opts.Dir), s.opts.MaxStore, 64<<20)
	s.conf = filepath.Join(s.t.TempDir(), "nats.conf")
	return os.WriteFile(s.conf, []byte(conf), 0o600)
}

func (s *Server) start() {
	s.t.Helper()
	bin, err := binary()
	if err != nil {
		s.t.Fatal(err)
	}
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		s.t.Fatal("natstest: the server is running")
	}
	var cmd *exec.Cmd
	for tries := 1; ; tries++ {
		cmd = exec.Command(bin, "-c", s.conf)
		cmd.Env = serverEnv()
		cmd.Stdout = lockedWriter{s}
		cmd.Stderr = lockedWriter{s}
		cmd.SysProcAttr = sysProcAttr()
		err := cmd.Start()
		if err == nil {
			break
		}
		// ETXTBSY: the go command of another package's tests, which built
		// the cached binary at the same moment, is still writing it (the
		// same bytes).
		if !errors.Is(err, syscall.ETXTBSY) || tries == startTries {
			s.mu.Unlock()
			s.t.Fatalf("natstest: starting the server: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(done); err != nil {
		s.end(syscall.SIGKILL)
		s.t.Fatalf("natstest: %v\n%s", err, s.Log())
	}
}

// waitReady waits until a client can connect and JetStream answers.
func (s *Server) waitReady(exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		nc, err := nats.Connect(s.URL(), nats.Timeout(time.Second))
		if err == nil {
			_, err = nc.Request("$JS.API.INFO", nil, 5*time.Second)
			nc.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("the server exited at start")
		case <-ctx.Done():
			return fmt.Errorf("the server was not ready within %v: %v", readyTimeout, err)
		case <-time.After(20 * time.Millisecond): // polls the port until the server listens
		}
	}
}

// serverEnv returns the environment of a server process: the test's, on
// one processor (GOMAXPROCS=1) unless the test's environment sets
// GOMAXPROCS. Tests run many processes at once, servers and the bots that
// use them, and a process's idle processors looking for work cost CPU that
// the processes working need.
func serverEnv() []string {
	env := os.Environ()
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		env = append(env, "GOMAXPROCS=1")
	}
	return env
}

// lockedWriter appends the server's output to its log.
type lockedWriter struct{ s *Server }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.log.Write(p)
}

// The server binary is the module's tool nats-server (the tool directive
// in go.mod): the go command builds it without the race detector, from
// the version go.mod requires, and keeps it in its build cache, so that
// the test processes of every package, and every run, share one build.
// Where the go command keeps no executables (a GOCACHEPROG cache), it is
// built with go build into a directory [Cleanup] removes.
var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// binary returns the path of the nats-server binary, building it if the
// build cache does not hold it yet.
func binary() (string, error) {
	built.once.Do(func() {
		var stderr bytes.Buffer
		cmd := exec.Command("go", "tool", "-n", "nats-server")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			built.err = fmt.Errorf("natstest: go tool -n nats-server: %v\n%s", err, stderr.Bytes())
			return
		}
		path := strings.TrimSpace(string(out))
		if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
			built.path = path
			return
		}
		dir, err := os.MkdirTemp("", "natstest-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		path = filepath.Join(dir, "nats-server")
		if out, err := exec.Command("go", "build", "-o", path, "github.com/nats-io/nats-server/v2").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("natstest: go build nats-server: %v\n%s", err, out)
			return
		}
		built.path = path
	})
	return built.path, built.err
}

// Cleanup removes the server binary built for this process's tests, if
// it was built outside the build cache. Call it from TestMain after the
// tests ran.
func Cleanup() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}
