package telegram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/platform"
)

// The tests in this file check RunConfirmed's promise: an update is
// confirmed to Telegram only once handle took it, so every update is
// handed on exactly once, in order, however often handle refuses.

var errRefused = errors.New("refused for the test")

// backlogAPI is an in-memory Bot API for tests in fake time whose
// getUpdates confirms by offset, as Telegram's does: it answers with the
// pending updates from the offset on (100 at most) and drops those below
// it. With nothing pending, a long poll waits until the request's context
// ends. It calls onPoll with each getUpdates offset before answering.
type backlogAPI struct {
	mu      sync.Mutex
	pending []int // update IDs; update n is a message in chat 1+n%chats
	chats   int
	polls   []time.Time
	onPoll  func(offset int)
}

func newBacklogAPI(n, chats int) *backlogAPI {
	api := &backlogAPI{chats: chats}
	for id := 1; id <= n; id++ {
		api.pending = append(api.pending, id)
	}
	return api
}

func (api *backlogAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body.Close()
	params, _ := url.ParseQuery(string(body))
	answer := `true`
	switch path.Base(req.URL.Path) {
	case "getMe":
		answer = `{"id":1,"is_bot":true,"first_name":"B","username":"b"}`
	case "getUpdates":
		offset, _ := strconv.Atoi(params.Get("offset"))
		timeout, _ := strconv.Atoi(params.Get("timeout"))
		api.mu.Lock()
		api.polls = append(api.polls, time.Now())
		onPoll := api.onPoll
		api.mu.Unlock()
		if onPoll != nil {
			onPoll(offset)
		}
		api.mu.Lock()
		api.pending = slices.DeleteFunc(api.pending, func(id int) bool { return id < offset })
		ids := api.pending[:min(len(api.pending), pollLimit)]
		var b strings.Builder
		b.WriteByte('[')
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"update_id":%d,"message":{"message_id":%d,"chat":{"id":%d,"type":"private"},"date":1,"text":"%d"}}`,
				id, id, 1+id%api.chats, id)
		}
		b.WriteByte(']')
		api.mu.Unlock()
		if len(ids) == 0 && timeout > 0 {
			<-req.Context().Done()
			return nil, req.Context().Err()
		}
		answer = b.String()
	}
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"application/json"}},
		Body:       io.NopCloser(bytes.NewReader([]byte(`{"ok":true,"result":` + answer + `}`))),
		Request:    req,
	}, nil
}

func (api *backlogAPI) left() int {
	api.mu.Lock()
	defer api.mu.Unlock()
	return len(api.pending)
}

func (api *backlogAPI) pollTimes() []time.Time {
	api.mu.Lock()
	defer api.mu.Unlock()
	return slices.Clone(api.polls)
}

func newBacklogAdapter(t *testing.T, api *backlogAPI) *Adapter {
	t.Helper()
	a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: api}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A backlog of 250 updates in 5 chats, with handle refusing every other
// call: every update is handed on exactly once and in order, each refusal
// is followed by a wait of a second, and no getUpdates offset ever passes
// an update that was not taken.
func TestPollRefusedUpdatesAreAskedForAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const n, chats = 250, 5
		api := newBacklogAPI(n, chats)
		var (
			mu    sync.Mutex
			calls int
			taken []int
		)
		all := make(chan struct{})
		api.onPoll = func(offset int) {
			mu.Lock()
			defer mu.Unlock()
			if offset > len(taken)+1 {
				t.Errorf("getUpdates offset %d confirms updates not taken: only 1..%d were", offset, len(taken))
			}
		}
		a := newBacklogAdapter(t, api)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		start := time.Now()
		go func() {
			done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if calls++; calls%2 == 0 {
					return errRefused
				}
				id, _ := strconv.Atoi(ev.ID)
				taken = append(taken, id)
				if len(taken) == n {
					close(all)
				}
				return nil
			}})
		}()
		select {
		case <-all:
		case err := <-done:
			t.Fatalf("RunConfirmed returned %v", err)
		case <-time.After(time.Hour): // fake time: a bound, not a wait
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of %d updates taken after an hour", len(taken), n)
		}
		took := time.Since(start)
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunConfirmed = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		for i, id := range taken {
			if id != i+1 {
				t.Fatalf("updates taken in the order %v…; want 1, 2, 3, … each once", taken[:i+1])
			}
		}
		// Every update but the first was refused once, and each refusal
		// waited a second (a different update each time, so no doubling).
		if want := (n - 1) * time.Second; took != want {
			t.Errorf("took %v of fake time; want %v (one second per refusal)", took, want)
		}
		if api.left() != 0 {
			t.Errorf("%d updates left unconfirmed after a clean stop", api.left())
		}
	})
}

// An update refused again and again is asked for after 1 s, 2 s, 4 s, …
// up to 16 s. When RunConfirmed stops, the updates taken are confirmed and
// nothing after them.
func TestPollRefusedBackoffAndFinalConfirm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newBacklogAPI(10, 1)
		var (
			mu    sync.Mutex
			taken []string
			last  int // the last offset sent
		)
		api.onPoll = func(offset int) {
			mu.Lock()
			last = offset
			mu.Unlock()
		}
		a := newBacklogAdapter(t, api)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
				mu.Lock()
				defer mu.Unlock()
				if ev.ID == "4" { // update 4 is refused for good
					return errRefused
				}
				taken = append(taken, ev.ID)
				return nil
			}})
		}()
		time.Sleep(time.Minute)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("RunConfirmed = %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(taken, []string{"1", "2", "3"}) {
			t.Fatalf("taken %q; want 1, 2, 3 and nothing after the refused update", taken)
		}
		// Polls at 0, 1, 3, 7, 15, 31, 47 s: waits 1, 2, 4, 8, 16, 16 s.
		polls := api.pollTimes()
		var gaps []time.Duration
		for i := 1; i < len(polls); i++ {
			gaps = append(gaps, polls[i].Sub(polls[i-1]))
		}
		// The offset the last poll sent, 4, is already the one to
		// confirm: no call on the way out.
		want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second}
		if !slices.Equal(gaps, want) {
			t.Fatalf("gaps between polls %v; want %v", gaps, want)
		}
		if last != 4 || api.left() != 7 {
			t.Fatalf("last offset %d, %d updates pending; want 4 and 7 (4 to 10 unconfirmed)", last, api.left())
		}
	})
}

// When RunConfirmed stops between polls, it confirms on its way out
// exactly the updates taken since the last poll: all of a batch, or those
// before an update handle refused. The fake Bot API answers at once, so
// the confirming call, which has half a second, cannot run out of time
// (the tests against the fake server on real sockets do not count on it).
func TestPollConfirmsOnTheWayOut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuse  int   // the update handle refuses, stopping RunConfirmed; 0: none
		want    []int // the updates taken
		offsets []int // the offsets getUpdates was called with
		left    int   // updates pending after the stop
	}{
		{"after a batch", 0, []int{1, 2, 3, 4, 5}, []int{0, 6}, 0},
		{"waiting after a refusal", 4, []int{1, 2, 3}, []int{0, 4}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newBacklogAPI(5, 1)
				var (
					mu      sync.Mutex
					offsets []int
					taken   []int
				)
				api.onPoll = func(offset int) {
					mu.Lock()
					offsets = append(offsets, offset)
					mu.Unlock()
				}
				a := newBacklogAdapter(t, api)
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				err := a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error {
					id, _ := strconv.Atoi(ev.ID)
					if id == tc.refuse {
						cancel() // RunConfirmed stops in the wait after the refusal
						return errRefused
					}
					mu.Lock()
					taken = append(taken, id)
					mu.Unlock()
					if id == 5 {
						cancel() // RunConfirmed stops before its next poll
					}
					return nil
				}})
				if err != nil {
					t.Fatalf("RunConfirmed = %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(taken, tc.want) || !slices.Equal(offsets, tc.offsets) || api.left() != tc.left {
					t.Fatalf("taken %v, getUpdates offsets %v, %d pending; want %v, %v and %d",
						taken, offsets, api.left(), tc.want, tc.offsets, tc.left)
				}
			})
		})
	}
}

// runConfirmed is RunConfirmed in a goroutine, stopped at cleanup.
func runConfirmed(t *testing.T, a *Adapter, handle func(platform.Event) error) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, platform.Inbound{Handle: handle}) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(waitPeriod):
				err = errors.New("RunConfirmed did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// Against the fake Bot API: updates refused when Run stops stay pending on
// the server, and the next Run hands them on, after exactly those taken.
func TestPollRefusedUpdatesSurviveARestart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := waitCtx(t)
	const n, takeFirst = 150, 120
	for i := range n {
		h.srv.SendUserMessage(int64(1+i%5), ann, strconv.Itoa(i+1))
	}
	var (
		mu      sync.Mutex
		taken   []string
		refused []string
	)
	refusedOnce := make(chan struct{})
	stop := runConfirmed(t, h.a, func(ev platform.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if len(taken) == takeFirst {
			if refused = append(refused, ev.Text); len(refused) == 1 {
				close(refusedOnce)
			}
			return errRefused
		}
		taken = append(taken, ev.Text)
		return nil
	})
	select {
	case <-refusedOnce:
	case <-ctx.Done():
		t.Fatal("nothing refused")
	}
	// Stopped once a poll has asked for the refused update again, which
	// confirms exactly the updates taken. (Stopped earlier, in the wait
	// after the refusal, Run confirms them on its way out, with a call
	// that has half a second of real time: TestPollConfirmsOnTheWayOut
	// checks that in fake time.)
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Offset() == takeFirst+1 }); err != nil {
		t.Fatalf("no poll asked for the refused update again: server offset %d: %v", h.srv.Offset(), err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if refused[0] != strconv.Itoa(takeFirst+1) {
		t.Fatalf("refused %q first; want %d", refused[0], takeFirst+1)
	}
	mu.Unlock()
	// Exactly the updates taken are confirmed.
	if off, left := h.srv.Offset(), h.srv.Pending(); off != takeFirst+1 || left != n-takeFirst {
		t.Fatalf("server offset %d, %d pending; want %d and %d", off, left, takeFirst+1, n-takeFirst)
	}
	if logged(h.logs, "an update was refused") == 0 {
		t.Fatal("refusal not logged")
	}

	stop = runConfirmed(t, h.a, func(ev platform.Event) error {
		mu.Lock()
		defer mu.Unlock()
		taken = append(taken, ev.Text)
		return nil
	})
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Pending() == 0 && h.srv.WaitingPolls() == 1 }); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(taken) != n {
		t.Fatalf("%d updates taken; want %d", len(taken), n)
	}
	for i, text := range taken {
		if text != strconv.Itoa(i+1) {
			t.Fatalf("update %d taken as %q; want each once, in order", i+1, text)
		}
	}
}

// In webhook mode a refused update is answered 503, and Telegram sends it
// again. Four chats post their updates concurrently, each in order and
// each update until it is answered 200, as Telegram does; some accepted
// updates are sent twice more, as after a timeout. With handle refusing
// every other call, every update is handed on exactly once, in order per
// chat, and only updates taken are answered 200.
func TestWebhookRefusedUpdatesAreSentAgain(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.Webhook = WebhookConfig{Listen: "127.0.0.1:0", Path: "/hook", SecretToken: webhookSecret, URL: "https://bot.example/hook"}
	})
	ctx := waitCtx(t)
	var (
		mu    sync.Mutex
		calls int
		taken = map[string][]int{} // chat → update IDs taken
		ids   = map[int]bool{}
	)
	stop := runConfirmed(t, h.a, func(ev platform.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls%2 == 0 {
			return errRefused
		}
		id, _ := strconv.Atoi(ev.ID)
		taken[ev.Chat.ID] = append(taken[ev.Chat.ID], id)
		ids[id] = true
		return nil
	})
	if err := h.srv.WaitUntil(ctx, func() bool { return h.srv.Webhook().URL != "" && h.a.WebhookAddr() != nil }); err != nil {
		t.Fatal(err)
	}
	hook := "http://" + h.a.WebhookAddr().String() + "/hook"
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	const chats, perChat = 4, 40
	var wg sync.WaitGroup
	for c := 1; c <= chats; c++ {
		wg.Go(func() {
			for i := range perChat {
				id := 1 + i*chats + (c - 1)
				body := fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"chat":{"id":%d,"type":"private"},"date":1,"text":"x"}}`, id, id, c)
				sends := 1
				if i%3 == 0 {
					sends = 3 // accepted, then sent again twice
				}
				for accepted := 0; accepted < sends; {
					status, retryAfter, err := postUpdate(ctx, client, hook, body)
					if err != nil {
						t.Error(err)
						return
					}
					switch status {
					case http.StatusOK:
						mu.Lock()
						ok := ids[id]
						mu.Unlock()
						if !ok {
							t.Errorf("update %d answered 200 but not taken", id)
						}
						accepted++
					case http.StatusServiceUnavailable:
						if retryAfter == "" {
							t.Errorf("503 for update %d without Retry-After", id)
						}
					default:
						t.Errorf("update %d answered %d", id, status)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for c := 1; c <= chats; c++ {
		got := taken[strconv.Itoa(c)]
		if len(got) != perChat {
			t.Errorf("chat %d: %d updates taken; want %d: %v", c, len(got), perChat, got)
			continue
		}
		for i, id := range got {
			if want := 1 + i*chats + (c - 1); id != want {
				t.Errorf("chat %d: updates taken %v; want each once, in order", c, got)
				break
			}
		}
	}
}

// postUpdate POSTs an update to the webhook with the secret, as Telegram
// does, and returns the status and Retry-After header.
func postUpdate(ctx context.Context, c *http.Client, hook, body string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(secretHeader, webhookSecret)
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}
