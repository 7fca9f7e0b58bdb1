package telegram

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/platform"
)

// scripted is an in-memory Bot API for tests in fake time: it answers each
// method from a queue of replies, records when each call came, and, once
// the queue of getUpdates is empty, holds a long poll until the request's
// context ends and answers one with timeout 0 at once with no update, as
// Telegram does (with stall, it holds that too). It needs no sockets, so
// it runs inside a synctest bubble.
type scripted struct {
	mu      sync.Mutex
	replies map[string][]reply
	calls   []call
	stall   bool
}

type reply struct {
	status int
	body   string
}

type call struct {
	method string
	at     time.Time
}

func ok(result string) reply { return reply{200, `{"ok":true,"result":` + result + `}`} }

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	var params url.Values
	if req.Body != nil {
		body, _ := io.ReadAll(req.Body)
		req.Body.Close()
		params, _ = url.ParseQuery(string(body))
	}
	method := path.Base(req.URL.Path)
	s.mu.Lock()
	s.calls = append(s.calls, call{method, time.Now()})
	var r *reply
	if q := s.replies[method]; len(q) > 0 {
		r, s.replies[method] = &q[0], q[1:]
	}
	s.mu.Unlock()
	if r == nil {
		switch method {
		case "getMe":
			x := ok(`{"id":1,"is_bot":true,"first_name":"B","username":"b"}`)
			r = &x
		case "getUpdates":
			if params.Get("timeout") == "" && !s.stall {
				x := ok("[]")
				r = &x
				break
			}
			<-req.Context().Done()
			return nil, req.Context().Err()
		default:
			x := ok("true")
			r = &x
		}
	}
	ct := "application/json"
	if strings.HasPrefix(r.body, "<") {
		ct = "text/html"
	}
	return &http.Response{
		StatusCode: r.status,
		Header:     http.Header{"Content-Type": {ct}},
		Body:       io.NopCloser(strings.NewReader(r.body)),
		Request:    req,
	}, nil
}

// times returns when method was called.
func (s *scripted) times(method string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, c := range s.calls {
		if c.method == method {
			out = append(out, c.at)
		}
	}
	return out
}

const oneUpdate = `[{"update_id":5,"message":{"message_id":1,"chat":{"id":1,"type":"private"},"date":1,"text":"hi"}}]`

// runScripted runs an adapter against s in a synctest bubble until it has
// delivered one event, then stops it; it returns Run's error and the log.
func runScripted(t *testing.T, s *scripted) *observer.ObservedLogs {
	t.Helper()
	core, logs := observer.New(zap.DebugLevel)
	a, err := New(Config{
		Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s",
		HTTPClient: &http.Client{Transport: s}, Logger: zap.New(core),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	events := make(chan platform.Event, 10)
	done := make(chan error, 1)
	go func() {
		done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { events <- ev; return nil }})
	}()
	select {
	case ev := <-events:
		if ev.ID != "5" {
			t.Fatalf("event %+v", ev)
		}
	case err := <-done:
		t.Fatalf("Run returned %v before the update", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	assertNoTokenInLogs(t, logs)
	return logs
}

func TestPollHonoursRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name string
		body string
		want time.Duration
	}{
		{"parameters", `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 5","parameters":{"retry_after":5}}`, 5 * time.Second},
		{"description only", `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3"}`, 3 * time.Second},
		{"hours", `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 10072","parameters":{"retry_after":10072}}`, 10072 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{replies: map[string][]reply{"getUpdates": {{429, tt.body}, ok(oneUpdate)}}}
				runScripted(t, s)
				at := s.times("getUpdates")
				if len(at) < 2 {
					t.Fatalf("getUpdates calls at %v", at)
				}
				if got := at[1].Sub(at[0]); got != tt.want {
					t.Fatalf("second poll %v after the 429; want exactly %v", got, tt.want)
				}
			})
		})
	}
}

func TestPollBacksOffExponentially(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fail := reply{500, `{"ok":false,"error_code":500,"description":"Internal Server Error"}`}
		html := reply{502, "<html><body>502 Bad Gateway</body></html>"}
		s := &scripted{replies: map[string][]reply{"getUpdates": {fail, fail, html, fail, fail, fail, fail, fail, ok(oneUpdate)}}}
		logs := runScripted(t, s)
		at := s.times("getUpdates")
		if len(at) < 9 {
			t.Fatalf("%d getUpdates calls", len(at))
		}
		for i := range 8 {
			gap := at[i+1].Sub(at[i])
			d := min(minBackoff<<i, maxBackoff)
			if gap < d/2 || gap >= d {
				t.Errorf("wait after failure %d = %v; want in [%v, %v)", i+1, gap, d/2, d)
			}
		}
		// Failures are logged at most once every 10 s, with a count of those
		// left out: the first at once, and over the 30 s and more of the 8,
		// at least one more.
		if lines, n := loggedLimited(logs, "getUpdates failed"); lines < 2 || n > 8 || lines > 4 {
			t.Errorf("%d failure log lines accounting for %d failures; want 2 to 4 lines for at most 8", lines, n)
		}
		if first := logs.FilterMessageSnippet("getUpdates failed").All(); len(first) == 0 || !first[0].Time.Equal(at[0]) {
			t.Errorf("the first failure was not logged at once")
		}
	})
}

func TestRunStartupRetriesAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// getMe fails twice with 502, then works; deleteWebhook 429s once.
		s := &scripted{replies: map[string][]reply{
			"getMe":         {{502, "<html>bad gateway</html>"}, {503, `{"ok":false,"error_code":503,"description":"Service Unavailable"}`}},
			"deleteWebhook": {{429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 2","parameters":{"retry_after":2}}`}},
			"getUpdates":    {ok(oneUpdate)},
		}}
		runScripted(t, s)
		if got := len(s.times("getMe")); got != 3 {
			t.Fatalf("getMe calls = %d; want 3", got)
		}
		dw := s.times("deleteWebhook")
		if len(dw) != 2 || dw[1].Sub(dw[0]) != 2*time.Second {
			t.Fatalf("deleteWebhook at %v; want two calls 2s apart", dw)
		}
	})

	synctest.Test(t, func(t *testing.T) {
		// A cancel during an hour-long retry_after returns at once.
		s := &scripted{replies: map[string][]reply{
			"getUpdates": {{429, `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3600","parameters":{"retry_after":3600}}`}},
		}}
		a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: s}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { return nil }}) }()
		time.Sleep(time.Minute)
		synctest.Wait()
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if len(s.times("getUpdates")) != 1 || time.Since(start) != 0 {
			t.Fatalf("Run took %v of fake time to stop; polls %d", time.Since(start), len(s.times("getUpdates")))
		}
	})
}

func TestPollNoProgressBacksOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Updates with no update_id cannot be skipped by offset: polling
		// again at once would spin, so the loop backs off.
		junk := ok(`[{"message":{"text":"no id"}}, 17]`)
		s := &scripted{replies: map[string][]reply{"getUpdates": {junk, junk, ok(oneUpdate)}}}
		logs := runScripted(t, s)
		at := s.times("getUpdates")
		if len(at) < 3 || at[1].Sub(at[0]) < minBackoff/2 || at[2].Sub(at[1]) < minBackoff {
			t.Fatalf("polls at %v; want backoff between them", at)
		}
		// Within 10 s, one line each for the 4 skips and the 2 failures.
		if n := logged(logs, "skipping a malformed update"); n != 1 {
			t.Fatalf("%d skip log lines; want 1", n)
		}
		failed := logs.FilterMessageSnippet("getUpdates failed").All()
		if len(failed) != 1 || !strings.Contains(fmt.Sprint(failed[0].ContextMap()["error"]), errNoProgress.Error()) {
			t.Fatalf("no-progress failures logged as %+v", failed)
		}
	})
}

// Telegram starts update IDs afresh, possibly lower, after a week without
// updates (go-telegram-bot-api issue #156 shows getUpdates with offset
// 727334708 answered with update_id 117314199). Run hands the new update
// on, and when the same answer comes again it backs off instead of
// polling in a tight loop.
func TestPollUpdateIDsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		msg := func(id int, text string) string {
			return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"chat":{"id":1,"type":"private"},"date":1,"text":%q}}`, id, id, text)
		}
		low := ok("[" + msg(117314199, "after a week") + "]")
		replies := []reply{ok("[" + msg(727334707, "before") + "]")}
		for range 100 { // a server that does not take the confirmation
			replies = append(replies, low)
		}
		s := &scripted{replies: map[string][]reply{"getUpdates": replies}}
		a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: s}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var texts []string
		done := make(chan error, 1)
		go func() {
			done <- a.Run(ctx, platform.Inbound{Handle: func(ev platform.Event) error { texts = append(texts, ev.Text); return nil }})
		}()
		time.Sleep(10 * time.Second)
		synctest.Wait()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if !slices.Equal(texts, []string{"before", "after a week"}) {
			t.Fatalf("handled %q; want the update after the reset too, once", texts)
		}
		// Polls 1 and 2 got the updates; the repeats after them back off
		// (at least 0.25 s, 0.5 s, 1 s, 2 s, 4 s, 8 s, with jitter), so
		// 10 s hold at most 8 polls.
		if n := len(s.times("getUpdates")); n > 8 {
			t.Fatalf("%d getUpdates calls in 10 s: the loop does not back off", n)
		}
	})
}

// Run returns within a second of its context ending, even in the middle
// of a poll and with handled updates left to confirm, whose confirming
// call is the one thing Run waits for: here the server never answers a
// poll, the confirming ones included, the worst case.
func TestRunStopsWithinASecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{replies: map[string][]reply{"getUpdates": {ok(oneUpdate)}}, stall: true}
		a, err := New(Config{Token: testToken, APIEndpoint: "http://api.invalid/bot%s/%s", HTTPClient: &http.Client{Transport: s}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		var handled atomic.Int32
		go func() {
			done <- a.Run(ctx, platform.Inbound{Handle: func(platform.Event) error { handled.Add(1); return nil }})
		}()
		synctest.Wait() // the update is handled, and the next poll, which would confirm it, waits
		if polls, n := len(s.times("getUpdates")), handled.Load(); polls != 2 || n != 1 {
			t.Fatalf("%d polls, %d events before the stop; want 2 and 1", polls, n)
		}
		start := time.Now()
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Run returned %v after its context ended; want within a second", took)
		}
		if polls := len(s.times("getUpdates")); polls != 3 {
			t.Errorf("%d getUpdates calls; want 3 (the last confirming the update on the way out)", polls)
		}
	})
}
