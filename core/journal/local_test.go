package journal_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/journal/journaltest"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// The engine's default journal, which keeps nothing, passes the suite.
func TestLocalInMemory(t *testing.T) {
	journaltest.Run(t, func(*testing.T) journal.Journal { return journal.NewLocal(nil) }, journaltest.Features{})
}

// A Local over a log in memory that can be made to refuse, as a store
// whose disk is full, passes the suite's outage, large-record and
// unrecordable checks too.
func TestLocalOverLog(t *testing.T) {
	var last *memLog
	journaltest.Run(t, func(*testing.T) journal.Journal {
		last = newMemLog()
		return journal.NewLocal(last)
	}, journaltest.Features{
		Outage: func(*testing.T) func() {
			last.refuse(true)
			return func() { last.refuse(false) }
		},
		Unrecordable: func() platform.SendRequest {
			return platform.SendRequest{Platform: journaltest.Adapter, Target: platform.Chat{ID: "a"},
				Message: platform.TextMessage(strings.Repeat("x", memLogMax+1))}
		},
		Large: 3 << 20,
	})
}

// memLogMax is the largest text a memLog records.
const memLogMax = 16 << 20

// memLog is a journal.Log in memory: it knows events and sends by their
// IDs, refuses every write while refusing is set, and is a journal.Waiter.
type memLog struct {
	mu       sync.Mutex
	seen     map[string]bool
	refusing bool
	back     chan struct{}
}

func newMemLog() *memLog { return &memLog{seen: map[string]bool{}} }

var errFull = fmt.Errorf("memlog: full: %w", journal.ErrOutage)

func (l *memLog) refuse(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case on && !l.refusing:
		l.back = make(chan struct{})
	case !on && l.refusing:
		close(l.back)
	}
	l.refusing = on
}

func (l *memLog) WaitRecording(ctx context.Context) error {
	l.mu.Lock()
	back := l.back
	refusing := l.refusing
	l.mu.Unlock()
	if !refusing {
		return nil
	}
	select {
	case <-back:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *memLog) record(key string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.refusing {
		return false, errFull
	}
	if key != "" && l.seen[key] {
		return true, nil
	}
	if key != "" {
		l.seen[key] = true
	}
	return false, nil
}

func (l *memLog) RecordEvent(_ context.Context, ev platform.Event) (journal.Record, bool, error) {
	dup, err := l.record("ev:" + ev.ID)
	if err != nil || dup {
		return nil, dup, err
	}
	return memRecord{}, false, nil
}

func (l *memLog) RecordSend(_ context.Context, s journal.Send) (journal.Record, journal.Appended, error) {
	if len(s.Request.Message.Text) > memLogMax {
		return nil, journal.Appended{}, platform.Permanent(fmt.Errorf("memlog: a text of %d bytes: %w", len(s.Request.Message.Text), journal.ErrUnrecordable))
	}
	key := ""
	if s.ID != "" {
		key = "send:" + s.ID
	}
	dup, err := l.record(key)
	if err != nil || dup {
		return nil, journal.Appended{Duplicate: dup}, err
	}
	return memRecord{}, journal.Appended{}, nil
}

func (l *memLog) Pending(context.Context) (journal.Pending, error) { return journal.Pending{}, nil }

func (l *memLog) Keep(sender.DeadLetter) (string, error) { return "", nil }

func (l *memLog) Forget(...string) error { return nil }

type memRecord struct{}

func (memRecord) Done(context.Context, *platform.SendResult) error { return nil }
func (memRecord) Save(context.Context, *platform.Progress) error   { return nil }
