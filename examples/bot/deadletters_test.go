package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// The operator lists the dead letters on the metrics address, each
// message cut as the logs cut it, and replays them once the chat takes
// messages again; a replay from another site's page is refused.
func TestDeadLetterRoutes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := memory.New()
	var blocked atomic.Bool
	blocked.Store(true)
	mem.FailWhen(func(platform.SendRequest) error {
		if blocked.Load() {
			return platform.Permanent(errors.New("403 Forbidden: bot was blocked by the user"))
		}
		return nil
	})
	e, err := engine.New(engine.WithAdapter(mem))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	long := strings.Repeat("é", 40)
	if _, err := e.Send(mem.Name(), memory.Private("9"), platform.TextMessage(long)).Wait(ctx); err == nil {
		t.Fatal("the send to a chat that blocked the bot succeeded")
	}
	mux := http.NewServeMux()
	deadLetterRoutes(mux, e, "")
	srv := httptest.NewServer(mux)
	defer srv.Close()

	type listing struct {
		DeadLetters []struct {
			Chat, Text, Error string
			Attempts          int
			Permanent         bool
			MaybeDelivered    bool `json:"maybe_delivered"`
		} `json:"dead_letters"`
	}
	list := func() listing {
		t.Helper()
		resp, err := http.Get(srv.URL + "/deadletters")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l listing
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /deadletters: %d, %v", resp.StatusCode, err)
		}
		return l
	}
	l := list()
	if len(l.DeadLetters) != 1 {
		t.Fatalf("listed %+v; want one dead letter", l)
	}
	if dl := l.DeadLetters[0]; dl.Chat != "9" || dl.Text != strings.Repeat("é", 32)+"…" || !dl.Permanent || !strings.Contains(dl.Error, "blocked") || dl.Attempts != 1 || dl.MaybeDelivered {
		t.Fatalf("listed %+v", dl)
	}
	// A letter whose request may have arrived says so: its replay may
	// send it twice.
	e.DeadLetterStore().Add(sender.DeadLetter{Request: platform.SendRequest{Platform: mem.Name(), Target: memory.Private("9"), Message: platform.TextMessage("maybe")},
		Attempts: 3, Err: platform.MaybeDelivered(errors.New("connection reset")), At: time.Now()})
	if l := list(); len(l.DeadLetters) != 2 || !l.DeadLetters[1].MaybeDelivered {
		t.Fatalf("listed %+v; want the second letter maybe delivered", l)
	}
	e.DeadLetterStore().Remove(e.DeadLetters()[1].ID)

	// A page whose domain an attacker pointed at the bot (DNS rebinding)
	// reads nothing.
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/deadletters", nil)
	req.Host = "evil.example:80"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("GET /deadletters for Host evil.example: %d; want 421", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, srv.URL+"/deadletters/replay", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(list().DeadLetters) != 1 {
		t.Fatalf("a replay from another site: %d; want 403 and the letter kept", resp.StatusCode)
	}

	blocked.Store(false)
	resp, err = http.Post(srv.URL+"/deadletters/replay", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var replayed struct{ Queued int }
	err = json.NewDecoder(resp.Body).Decode(&replayed)
	resp.Body.Close()
	if err != nil || replayed.Queued != 1 {
		t.Fatalf("POST /deadletters/replay: %+v, %v; want 1 queued", replayed, err)
	}
	if _, err := mem.WaitSent(ctx, "9", 1); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l.DeadLetters) != 0 {
		t.Fatalf("after the replay: %+v", l)
	}
	cancel()
	<-done
}

// At start, the dead letters a previous run saved are sent again, except
// those hold keeps (a send that may have arrived, where the operator asked
// for at most once): they stay dead letters, and are not sent.
func TestReplayDeadLettersHolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem))
	if err != nil {
		t.Fatal(err)
	}
	saved := sender.NewDeadLetterStore(10)
	saved.Add(sender.DeadLetter{Request: platform.SendRequest{Platform: mem.Name(), Target: memory.Private("1"), Message: platform.TextMessage("maybe")},
		Attempts: 1, Err: platform.Permanent(platform.MaybeDelivered(errors.New("connection reset"))), At: time.Now()})
	saved.Add(sender.DeadLetter{Request: platform.SendRequest{Platform: mem.Name(), Target: memory.Private("1"), Message: platform.TextMessage("owed")},
		Attempts: 5, Err: errors.New("giving up after 5 attempts"), At: time.Now()})
	path := filepath.Join(t.TempDir(), "dead.jsonl")
	var buf bytes.Buffer
	if err := saved.Save(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	hold := func(dl sender.DeadLetter) bool { return errors.Is(dl.Err, platform.ErrMaybeDelivered) }
	if err := replayDeadLetters(ctx, e, path, zap.NewNop(), hold); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	if _, err := mem.WaitSent(ctx, "1", 1); err != nil {
		t.Fatal(err)
	}
	if got := mem.Texts("1"); !slices.Equal(got, []string{"owed"}) {
		t.Fatalf("sent %q; want only the reply that surely did not arrive", got)
	}
	if dl := e.DeadLetters(); len(dl) != 1 || dl[0].Request.Message.Text != "maybe" {
		t.Fatalf("dead letters %+v; want the one held", dl)
	}
	cancel()
	<-done
}
