package telegram

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/internal/httpserve"
	"github.com/heraldbot/herald/platform"
)

// The tests in this file check the webhook's bounds: the run's server
// caps its connections (idle ones closed first) and cuts a body that
// stalls, and the handler reads only so many bytes of large bodies at
// once.

// startWebhook runs h's adapter in Webhook mode on a loopback port with
// the server limits lim, and returns the URL of its hook.
func startWebhook(t *testing.T, lim httpserve.Limits) (*harness, *running, string) {
	t.Helper()
	h := newHarness(t, func(c *Config) {
		c.Mode = Webhook
		c.Webhook = WebhookConfig{Listen: "127.0.0.1:0", Path: "/hook", SecretToken: webhookSecret}
	})
	h.a.web = lim
	r := h.run(t)
	succeedsSoon(t, func() error {
		if h.a.WebhookAddr() == nil || h.a.run.Load() == nil {
			return fmt.Errorf("webhook not served yet")
		}
		return nil
	})
	return h, r, "http://" + h.a.WebhookAddr().String() + "/hook"
}

// Three times the server's cap of connections, idle after a request or
// never sending one, are held open: updates posted meanwhile are still
// delivered, and the server never holds more than its cap.
func TestWebhookIdleConnectionsDoNotShutOut(t *testing.T) {
	const maxConns = 16
	h, r, hook := startWebhook(t, httpserve.Limits{MaxConns: maxConns, IdleTimeout: time.Hour, ReadHeaderTimeout: time.Hour})
	addr := h.a.WebhookAddr().String()
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := range 3 * maxConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		if i%2 == 0 {
			continue // never sends a request
		}
		// One request (a GET, answered 405), then idle on keep-alive.
		if _, err := io.WriteString(c, "GET /hook HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(waitPeriod))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			// Evicted before its answer came: the cap made room for a
			// later connection. That is the point; carry on.
			continue
		}
		resp.Body.Close()
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	ctx := waitCtx(t)
	for id := 1; id <= 10; id++ {
		status, _, err := postUpdate(ctx, client, hook, updateJSON(id, "through"))
		if err != nil || status != http.StatusOK {
			t.Fatalf("update %d: status %d, %v; want 200 while idle connections are held", id, status, err)
		}
	}
	for i, ev := range r.next(t, 10) {
		if ev.ID != fmt.Sprint(i+1) {
			t.Fatalf("event %d = %+v", i, ev)
		}
	}
	srv := h.a.webhookServer()
	if open := srv.Open(); open > maxConns {
		t.Errorf("%d connections open; want at most %d", open, maxConns)
	}
	if srv.Evicted() == 0 {
		t.Error("no connection evicted: the cap was never reached")
	}
}

// Requests whose bodies stall are cut once the server's ReadTimeout has
// passed: answered 400 or closed, counted, never handed on.
func TestWebhookStalledBodyIsCut(t *testing.T) {
	h, r, _ := startWebhook(t, httpserve.Limits{ReadTimeout: 300 * time.Millisecond})
	addr := h.a.WebhookAddr().String()
	const stalled = 20
	var wg sync.WaitGroup
	var cut atomic.Int32
	for range stalled {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			head := "POST /hook HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
				secretHeader + ": " + webhookSecret + "\r\nContent-Length: 1000\r\n\r\n" + `{"update_id":7,`
			if _, err := io.WriteString(c, head); err != nil {
				t.Error(err)
				return
			}
			// The rest of the body never comes. The server must end the
			// request on its own, well before this deadline.
			_ = c.SetReadDeadline(time.Now().Add(waitPeriod))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			switch {
			case err == nil:
				resp.Body.Close()
				if resp.StatusCode != http.StatusBadRequest {
					t.Errorf("stalled body answered %d; want 400", resp.StatusCode)
				}
				cut.Add(1)
			case isTimeout(err):
				t.Errorf("stalled body still open after %v", waitPeriod)
			default: // closed: cut too
				cut.Add(1)
			}
		})
	}
	wg.Wait()
	if cut.Load() != stalled {
		t.Fatalf("%d of %d stalled bodies cut", cut.Load(), stalled)
	}
	r.none(t)
	succeedsSoon(t, func() error {
		if got := h.a.Stats().WebhookInvalid; got != stalled {
			return fmt.Errorf("%d unreadable bodies counted; want %d", got, stalled)
		}
		return nil
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// updateOfSize returns an update of exactly n bytes of JSON.
func updateOfSize(id, n int) string {
	u := updateJSON(id, "")
	pad := n - len(u)
	return strings.Replace(u, `"text":""`, `"text":"`+strings.Repeat("x", pad)+`"`, 1)
}

// pipeBody is a request body that yields its content only once released,
// and counts the reads waiting for it.
type pipeBody struct {
	r       *io.PipeReader
	w       *io.PipeWriter
	content string
	waiting *atomic.Int32 // reads blocked in all pipeBodies
	reads   atomic.Int32
}

func newPipeBody(content string, waiting *atomic.Int32) *pipeBody {
	r, w := io.Pipe()
	return &pipeBody{r: r, w: w, content: content, waiting: waiting}
}

func (b *pipeBody) Read(p []byte) (int, error) {
	b.reads.Add(1)
	b.waiting.Add(1)
	defer b.waiting.Add(-1)
	return b.r.Read(p)
}

// release writes the content and ends the body.
func (b *pipeBody) release() {
	go func() {
		_, _ = io.WriteString(b.w, b.content)
		_ = b.w.Close()
	}()
}

// The handler reads at most the body budget's bytes of large bodies at
// once: with room for two bodies of 1 MiB, two of five are read, the other
// three wait a second for room and are answered 503 with Retry-After; a
// small body passes meanwhile; a body over 4 MiB is refused before it is
// read; and once the two bodies arrive, their updates are handed on.
func TestWebhookBodyBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		// No fake Bot API: its socket would keep the bubble from ever
		// being idle. The handler needs none.
		a, err := New(Config{Token: testToken, Mode: Webhook, Webhook: WebhookConfig{SecretToken: webhookSecret}})
		if err != nil {
			t.Fatal(err)
		}
		h := &harness{a: a}
		h.a.budget = newByteBudget(2 << 20)
		var (
			mu       sync.Mutex
			handled  []string
			inRead   atomic.Int32
			wg       sync.WaitGroup
			statuses = map[int]int{}
			retry    = map[int]string{}
		)
		activate(t, h.a, func(ev platform.Event) error {
			mu.Lock()
			defer mu.Unlock()
			handled = append(handled, ev.ID)
			return nil
		})
		serve := func(id int, body io.Reader, length int64) {
			wg.Go(func() {
				req := httptest.NewRequest(http.MethodPost, "/", body)
				req.ContentLength = length
				req.Header.Set(secretHeader, webhookSecret)
				w := httptest.NewRecorder()
				h.a.WebhookHandler().ServeHTTP(w, req)
				mu.Lock()
				statuses[id], retry[id] = w.Code, w.Header().Get("Retry-After")
				mu.Unlock()
			})
		}
		const size = 1 << 20
		var bodies []*pipeBody
		for id := 1; id <= 5; id++ {
			b := newPipeBody(updateOfSize(id, size), &inRead)
			bodies = append(bodies, b)
			serve(id, b, size)
			synctest.Wait() // in order: 1 and 2 get the room
		}
		if n := inRead.Load(); n != 2 {
			t.Fatalf("%d large bodies being read at once; want 2 (the budget's 2 MiB)", n)
		}
		huge := newPipeBody("", &inRead)
		serve(6, huge, maxUpdateBody+1)
		serve(7, strings.NewReader(updateJSON(7, "small")), int64(len(updateJSON(7, "small"))))
		synctest.Wait()
		mu.Lock()
		if statuses[6] != http.StatusRequestEntityTooLarge || huge.reads.Load() != 0 || statuses[7] != http.StatusOK {
			t.Fatalf("over 4 MiB: %d after %d reads; small: %d; want 413 unread, and 200", statuses[6], huge.reads.Load(), statuses[7])
		}
		mu.Unlock()

		time.Sleep(budgetWait)
		synctest.Wait()
		mu.Lock()
		for id := 3; id <= 5; id++ {
			if statuses[id] != http.StatusServiceUnavailable || retry[id] != "1" || bodies[id-1].reads.Load() != 0 {
				t.Errorf("body %d: %d, Retry-After %q, %d reads; want 503 unread with Retry-After 1", id, statuses[id], retry[id], bodies[id-1].reads.Load())
			}
		}
		mu.Unlock()
		bodies[0].release()
		synctest.Wait()
		bodies[1].release()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		if statuses[1] != http.StatusOK || statuses[2] != http.StatusOK || strings.Join(handled, ",") != "7,1,2" {
			t.Fatalf("statuses %v, handled %v; want 1 and 2 answered 200 and handled after 7", statuses, handled)
		}
		if st := h.a.Stats(); st.WebhookBusy != 3 || st.WebhookInvalid != 1 || st.Taken != 3 {
			t.Fatalf("stats %+v; want 3 busy, 1 invalid, 3 taken", st)
		}
		if h.a.budget.used != 0 || len(h.a.budget.waiters) != 0 {
			t.Fatalf("budget holds %d bytes, %d waiters after the requests ended", h.a.budget.used, len(h.a.budget.waiters))
		}
	})
}

// A body of unknown length counts as the largest a body may be: it waits
// for the whole budget, and is read once that is free.
func TestWebhookBodyBudgetUnknownLength(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newByteBudget(2 << 20)
		ctx := t.Context()
		if !b.acquire(ctx, 1<<20) {
			t.Fatal("first acquire failed")
		}
		got := make(chan bool, 1)
		go func() { got <- b.acquire(ctx, maxUpdateBody) }() // more than the budget: all of it
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("the whole budget was granted while part of it was taken")
		default:
		}
		// A small request behind it waits its turn.
		small := make(chan bool, 1)
		go func() { small <- b.acquire(ctx, 1) }()
		synctest.Wait()
		if len(small) != 0 {
			t.Fatal("a later request passed one waiting before it")
		}
		b.release(1 << 20)
		if !<-got {
			t.Fatal("not granted once the budget was free")
		}
		b.release(maxUpdateBody)
		if !<-small {
			t.Fatal("the small request not granted")
		}
		b.release(1)
		if b.used != 0 {
			t.Fatalf("%d bytes still taken", b.used)
		}
	})
}
