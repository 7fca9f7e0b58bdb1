package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// stuckLine is the line the bot logs before it exits because its embedded
// server is stuck (see exitWhenStuck).
const stuckLine = "bot: the embedded NATS server is stuck"

// supervisor keeps the bot's process as a supervisor (systemd, Docker's
// restart policy) would: started again, with the same environment, when
// it exits because its embedded server was stuck (nats-server can
// deadlock when the disk fills while it compacts a stream; see
// embedded.Server.Stuck). A supervisor made of a process alone never
// starts it again.
type supervisor struct {
	mu       sync.Mutex
	p        *botProcess
	n        int  // times started again
	stopping bool // stop was called: the exit is not restarted
}

// supervise starts the bot with env and keeps it until ctx ends (the test
// ends ctx before its cleanups stop the processes).
func supervise(ctx context.Context, t *testing.T, env ...string) *supervisor {
	t.Helper()
	s := &supervisor{p: startBot(t, env...)}
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watch(ctx, t, env)
	}()
	t.Cleanup(func() { <-watched })
	return s
}

func (s *supervisor) watch(ctx context.Context, t *testing.T, env []string) {
	for {
		p := s.current()
		select {
		case <-p.done:
		case <-ctx.Done():
			return
		}
		s.mu.Lock()
		stopping := s.stopping
		s.mu.Unlock()
		if stopping || ctx.Err() != nil || !strings.Contains(p.stderr.String(), stuckLine) {
			return
		}
		np, err := launchBot(t, env...)
		if err != nil {
			t.Errorf("starting the bot again after its server was stuck: %v", err)
			return
		}
		t.Logf("the bot exited, its embedded server stuck; started again")
		s.mu.Lock()
		s.p, s.n = np, s.n+1
		s.mu.Unlock()
	}
}

// current returns the bot's process now.
func (s *supervisor) current() *botProcess {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.p
}

// restarts returns how many times the bot was started again.
func (s *supervisor) restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// stop stops the bot's process now (SIGTERM), not to be started again,
// and returns its exit code.
func (s *supervisor) stop(t *testing.T, timeout time.Duration) int {
	t.Helper()
	s.mu.Lock()
	s.stopping = true
	p := s.p
	s.mu.Unlock()
	return p.stop(t, timeout)
}
