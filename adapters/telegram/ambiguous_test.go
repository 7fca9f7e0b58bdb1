package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/internal/testport"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// The tests in this file check which send failures match
// platform.ErrMaybeDelivered (the message may have been delivered) and
// what Config.AvoidDuplicates makes of them: a failure after the request
// was written is ambiguous, one before it is not, and Telegram's own
// refusals are not.

// refusedDialer dials addr as asked, except that its dials number 1,
// 1+n, 1+2n, … go to a port nobody listens on, so the connection is
// refused for real.
type refusedDialer struct {
	closed string // a loopback address with no listener
	n      int64  // 0: never refuse
	dials  atomic.Int64
}

func newRefusedDialer(t *testing.T, n int64) *refusedDialer {
	t.Helper()
	// A port from below the ephemeral range: no listener on port 0 takes
	// it meanwhile.
	return &refusedDialer{closed: testport.Addr(t), n: n}
}

func (d *refusedDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if k := d.dials.Add(1); d.n > 0 && (k-1)%d.n == 0 {
		addr = d.closed
	}
	return new(net.Dialer).DialContext(ctx, network, addr)
}

func TestSendAmbiguousErrors(t *testing.T) {
	t.Parallel()
	dead := newRefusedDialer(t, 1) // every dial refused
	for _, tc := range []struct {
		name      string
		fault     *telegramtest.Fault
		dialer    *refusedDialer
		msg       platform.OutboundMessage
		ctx       func() (context.Context, context.CancelFunc)
		maybe     bool // the error matches ErrMaybeDelivered
		permanent bool // without AvoidDuplicates
		delivered int  // messages the chat got
	}{
		{name: "reset after Telegram accepted", fault: &telegramtest.Fault{Reset: true}, maybe: true, delivered: 1},
		{name: "reset before Telegram handled it", fault: &telegramtest.Fault{Drop: true}, maybe: true},
		{name: "upload reset after Telegram accepted", fault: &telegramtest.Fault{Reset: true}, maybe: true, delivered: 1,
			msg: platform.OutboundMessage{Attachments: []platform.Attachment{{Kind: platform.AttachDocument, Data: []byte("d"), FileName: "d.txt"}}}},
		{name: "a proxy's HTML 502", fault: &telegramtest.Fault{HTML: true}, maybe: true},
		{name: "Telegram's 500", fault: &telegramtest.Fault{Status: 500}, maybe: true},
		{name: "Telegram's 502", fault: &telegramtest.Fault{Status: 502, Description: "Bad Gateway"}, maybe: true},
		{name: "no answer before the deadline", fault: &telegramtest.Fault{Delay: time.Hour}, maybe: true,
			ctx: func() (context.Context, context.CancelFunc) {
				// Long enough for the request to be written on a slow
				// machine; the fault holds the answer an hour.
				return context.WithTimeout(context.Background(), 2*time.Second)
			}},
		{name: "blocked (403)", fault: &telegramtest.Fault{Status: 403}, permanent: true},
		{name: "bad request (400)", fault: &telegramtest.Fault{Status: 400}, permanent: true},
		{name: "flood (429)", fault: &telegramtest.Fault{Status: 429, RetryAfter: 3}},
		{name: "dial refused", dialer: dead},
		{name: "context ended before", ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}},
	} {
		for _, avoid := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/AvoidDuplicates=%v", tc.name, avoid), func(t *testing.T) {
				tr := &http.Transport{}
				if tc.dialer != nil {
					tr.DialContext = tc.dialer.DialContext
				}
				defer tr.CloseIdleConnections()
				h := newHarness(t, func(c *Config) {
					c.AvoidDuplicates = avoid
					c.HTTPClient = &http.Client{Transport: tr}
				})
				if tc.fault != nil {
					f := *tc.fault
					f.Times = 1
					h.srv.Inject(f)
				}
				ctx, cancel := context.WithTimeout(context.Background(), waitPeriod)
				if tc.ctx != nil {
					ctx, cancel = tc.ctx()
				}
				defer cancel()
				msg := tc.msg
				if msg.Text == "" && len(msg.Attachments) == 0 {
					msg = platform.TextMessage("hello")
				}
				_, err := h.a.Send(ctx, sendTo("1", msg))
				if err == nil {
					t.Fatal("Send succeeded")
				}
				assertNoToken(t, err)
				if got := errors.Is(err, platform.ErrMaybeDelivered); got != tc.maybe {
					t.Errorf("errors.Is(%v, ErrMaybeDelivered) = %v; want %v", err, got, tc.maybe)
				}
				if want := tc.permanent || avoid && tc.maybe; platform.IsPermanent(err) != want {
					t.Errorf("IsPermanent(%v) = %v; want %v", err, platform.IsPermanent(err), want)
				}
				if _, ok := platform.RetryAfterOf(err); ok != (tc.fault != nil && tc.fault.Status == 429) {
					t.Errorf("RetryAfterOf(%v) = %v", err, ok)
				}
				if got := len(h.srv.Sent(1)); got != tc.delivered {
					t.Errorf("the chat got %d messages; want %d", got, tc.delivered)
				}
			})
		}
	}
}

// An edit is never ambiguous: sent again after it was carried out, it
// answers "message is not modified", which is success. So a reset after
// Telegram applied it stays retryable, with AvoidDuplicates too, and the
// retry succeeds without changing anything twice.
func TestEditResetIsNotAmbiguous(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.AvoidDuplicates = true })
	ctx := waitCtx(t)
	res, err := h.a.Send(ctx, sendTo("1", platform.TextMessage("menu")))
	if err != nil {
		t.Fatal(err)
	}
	h.srv.Inject(telegramtest.Fault{Method: "editMessageText", Reset: true, Times: 1})
	edit := sendTo("1", platform.EditMessage(res.MessageID, "picked"))
	_, err = h.a.Send(ctx, edit)
	if err == nil || errors.Is(err, platform.ErrMaybeDelivered) || platform.IsPermanent(err) {
		t.Fatalf("edit after a reset = %v; want a retryable error that does not match ErrMaybeDelivered", err)
	}
	if _, err := h.a.Send(ctx, edit); err != nil {
		t.Fatalf("the edit again = %v; want success (message is not modified)", err)
	}
	id, _ := strconv.Atoi(res.MessageID)
	if m, ok := h.srv.Message(1, id); !ok || m.Text != "picked" || len(h.srv.Edits(1)) != 1 {
		t.Fatalf("message %+v, %d edits; want the text edited once", m, len(h.srv.Edits(1)))
	}
}

// A long message whose part 2 of 3 is reset after Telegram accepted it:
// by default the part is retried in place (delivered at least once, here
// twice) and the message completes; with AvoidDuplicates it is not, and
// Send fails for good, each part delivered at most once. Either way a
// failure after part 1 matches ErrMaybeDelivered.
func TestSendPartsAmbiguous(t *testing.T) {
	for _, avoid := range []bool{false, true} {
		t.Run(fmt.Sprint("AvoidDuplicates=", avoid), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := telegramtest.NewServer(telegramtest.InMemory())
				defer srv.Close()
				var n atomic.Int32
				srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
					if r.Method == "sendMessage" && n.Add(1) == 2 {
						return &telegramtest.Fault{Reset: true}
					}
					return nil
				})
				a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client(), AvoidDuplicates: avoid})
				if err != nil {
					t.Fatal(err)
				}
				_, err = a.Send(t.Context(), sendTo("1", platform.TextMessage(lines(3))))
				parts := splitText(lines(3), maxTextUnits, platform.ParsePlain)
				var got []string
				for _, m := range srv.Sent(1) {
					got = append(got, m.Text)
				}
				if !avoid {
					want := []string{parts[0], parts[1], parts[1], parts[2]}
					if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
						t.Fatalf("Send = %v, the chat got %d parts; want success and part 2 twice (at least once)", err, len(got))
					}
					return
				}
				if !platform.IsPermanent(err) || !errors.Is(err, platform.ErrMaybeDelivered) || !strings.Contains(err.Error(), "part 2 of 3") {
					t.Fatalf("Send = %v; want a permanent, ambiguous failure of part 2 of 3", err)
				}
				if strings.Join(got, "|") != strings.Join(parts[:2], "|") || n.Load() != 2 {
					t.Fatalf("the chat got %d parts in %d requests; want parts 1 and 2 once each, in 2", len(got), n.Load())
				}
			})
		})
	}

	// Part 1 follows the rule of single messages.
	for _, avoid := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			srv := telegramtest.NewServer(telegramtest.InMemory())
			defer srv.Close()
			srv.Inject(telegramtest.Fault{Method: "sendMessage", Reset: true, Times: 1})
			a, err := New(Config{Token: testToken, APIEndpoint: srv.Endpoint(), HTTPClient: srv.Client(), AvoidDuplicates: avoid})
			if err != nil {
				t.Fatal(err)
			}
			_, err = a.Send(t.Context(), sendTo("1", platform.TextMessage(lines(3))))
			if !errors.Is(err, platform.ErrMaybeDelivered) || platform.IsPermanent(err) != avoid || !strings.Contains(err.Error(), "part 1 of 3") {
				t.Fatalf("AvoidDuplicates=%v: Send = %v; want an ambiguous part 1 of 3, permanent only with AvoidDuplicates", avoid, err)
			}
			if len(srv.Sent(1)) != 1 {
				t.Fatalf("the chat got %d parts; want part 1 only", len(srv.Sent(1)))
			}
		})
	}
}

// chainResult is what the sends of TestSendDuplicatesThroughTheChain did.
type chainResult struct {
	counts   map[string]int // text → messages the chat got with it
	errs     map[string]error
	dead     []sender.DeadLetter
	requests int
}

// sendThroughChain sends "m1" … "mN" to chat 1 one after the other
// through the default sender chain (with dead letters and quick retries)
// in front of an adapter against srv.
func sendThroughChain(t *testing.T, srv *telegramtest.Server, n int, cfg Config) chainResult {
	t.Helper()
	cfg.Token, cfg.APIEndpoint = testToken, srv.Endpoint()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dead := sender.NewDeadLetterStore(n)
	s := sender.Default(sender.DefaultConfig{
		DeadLetters: dead,
		Retry:       sender.RetryConfig{BaseBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond},
	})(a.Sender())
	res := chainResult{counts: map[string]int{}, errs: map[string]error{}}
	for i := 1; i <= n; i++ {
		text := "m" + strconv.Itoa(i)
		if _, err := s.Send(waitCtx(t), sendTo("1", platform.TextMessage(text))); err != nil {
			res.errs[text] = err
			assertNoToken(t, err)
		}
	}
	for _, m := range srv.Sent(1) {
		res.counts[m.Text]++
	}
	res.dead = dead.List()
	res.requests = srv.Requests("sendMessage")
	return res
}

// The proxy of the issue resets connections right after the Bot API
// accepted a sendMessage (here every fourth request, 1, 5, 9, …) or before
// it handled one (3, 7, 11, …). Through the default sender chain, with the
// default Config every message is delivered at least once (those whose
// answer was lost, twice); with AvoidDuplicates none is delivered twice,
// and exactly the ambiguous ones are dead-lettered, without retries.
func TestSendDuplicatesThroughTheChain(t *testing.T) {
	const n = 60
	faulty := func(srv *telegramtest.Server) {
		var k atomic.Int32
		srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
			if r.Method != "sendMessage" {
				return nil
			}
			switch k.Add(1) % 4 {
			case 1:
				return &telegramtest.Fault{Reset: true}
			case 3:
				return &telegramtest.Fault{Drop: true}
			}
			return nil
		})
	}

	t.Run("at least once", func(t *testing.T) {
		srv := telegramtest.NewServer()
		defer srv.Close()
		faulty(srv)
		res := sendThroughChain(t, srv, n, Config{})
		twice := 0
		for i := 1; i <= n; i++ {
			text := "m" + strconv.Itoa(i)
			if res.counts[text] < 1 || res.errs[text] != nil {
				t.Errorf("%s: delivered %d times, error %v; want at least once and no error", text, res.counts[text], res.errs[text])
			}
			if res.counts[text] > 1 {
				twice++
			}
		}
		// Every message failed once: the odd ones after being accepted.
		if twice != n/2 || len(res.dead) != 0 || res.requests != 2*n {
			t.Errorf("%d delivered twice, %d dead letters, %d requests; want %d, 0 and %d", twice, len(res.dead), res.requests, n/2, 2*n)
		}
	})

	t.Run("AvoidDuplicates", func(t *testing.T) {
		srv := telegramtest.NewServer()
		defer srv.Close()
		faulty(srv)
		res := sendThroughChain(t, srv, n, Config{AvoidDuplicates: true})
		deadTexts := map[string]bool{}
		for _, dl := range res.dead {
			deadTexts[dl.Request.Message.Text] = true
			if !platform.IsPermanent(dl.Err) || !errors.Is(dl.Err, platform.ErrMaybeDelivered) || dl.Attempts != 1 {
				t.Errorf("dead letter %s: %d attempts, error %v; want one attempt and a permanent, ambiguous error", dl.Request.Message.Text, dl.Attempts, dl.Err)
			}
		}
		for i := 1; i <= n; i++ {
			text := "m" + strconv.Itoa(i)
			switch i % 4 {
			case 1: // accepted, answer lost
				if res.counts[text] != 1 || !deadTexts[text] {
					t.Errorf("%s: delivered %d times, dead-lettered %v; want once and dead-lettered", text, res.counts[text], deadTexts[text])
				}
			case 3: // dropped: lost, but dead-lettered
				if res.counts[text] != 0 || !deadTexts[text] {
					t.Errorf("%s: delivered %d times, dead-lettered %v; want never and dead-lettered", text, res.counts[text], deadTexts[text])
				}
			default:
				if res.counts[text] != 1 || res.errs[text] != nil {
					t.Errorf("%s: delivered %d times, error %v; want once", text, res.counts[text], res.errs[text])
				}
			}
		}
		if len(res.dead) != n/2 || res.requests != n {
			t.Errorf("%d dead letters, %d requests; want %d and %d (nothing retried)", len(res.dead), res.requests, n/2, n)
		}
	})

	// A refused dial surely sent nothing: it is retried even with
	// AvoidDuplicates, and every message is delivered exactly once.
	t.Run("dial refused, AvoidDuplicates", func(t *testing.T) {
		srv := telegramtest.NewServer()
		defer srv.Close()
		d := newRefusedDialer(t, 2) // dials 1, 3, 5, … refused
		tr := &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		res := sendThroughChain(t, srv, n/4, Config{AvoidDuplicates: true, HTTPClient: &http.Client{Transport: tr}})
		for i := 1; i <= n/4; i++ {
			text := "m" + strconv.Itoa(i)
			if res.counts[text] != 1 || res.errs[text] != nil {
				t.Errorf("%s: delivered %d times, error %v; want once, no error", text, res.counts[text], res.errs[text])
			}
		}
		if len(res.dead) != 0 || res.requests != n/4 || d.dials.Load() != int64(n/2) {
			t.Errorf("%d dead letters, %d requests, %d dials; want 0, %d and %d", len(res.dead), res.requests, d.dials.Load(), n/4, n/2)
		}
	})
}

// mayHaveArrived with transports that report their progress, and with one
// that reports nothing.
func TestMayHaveArrived(t *testing.T) {
	reset := errors.New("read: connection reset by peer")
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}
	for _, tc := range []struct {
		name  string
		trace func(*httptrace.ClientTrace) // the transport's progress, nil: none reported
		err   error
		want  bool
	}{
		{"untraced reset", nil, reset, true},
		{"untraced dial", nil, dial, false},
		{"untraced DNS", nil, &net.DNSError{Err: "no such host", Name: "api.telegram.org"}, false},
		{"traced, not written", func(ct *httptrace.ClientTrace) { ct.GetConn("x") }, reset, false},
		{"traced, write failed", func(ct *httptrace.ClientTrace) {
			ct.GetConn("x")
			ct.WroteRequest(httptrace.WroteRequestInfo{Err: reset})
		}, reset, false},
		{"written", func(ct *httptrace.ClientTrace) {
			ct.GetConn("x")
			ct.WroteRequest(httptrace.WroteRequestInfo{})
		}, reset, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
				if tc.trace != nil {
					tc.trace(httptrace.ContextClientTrace(r.Context()))
				}
				return nil, tc.err
			})
			bc := &boundClient{ctx: context.Background(), hc: &http.Client{Transport: rt}, red: redact.New(testToken)}
			req := httptest.NewRequest(http.MethodPost, "http://api.invalid/bot"+testToken+"/sendMessage", strings.NewReader("x"))
			req.RequestURI = ""
			_, err := bc.Do(req)
			if err == nil {
				t.Fatal("Do succeeded")
			}
			assertNoToken(t, err)
			if got := bc.mayHaveArrived(err); got != tc.want {
				t.Fatalf("mayHaveArrived(%v) = %v; want %v", err, got, tc.want)
			}
		})
	}

	// A context that ended before Do never reaches the transport, and an
	// upload's body is closed all the same.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var called bool
	bc := &boundClient{ctx: ctx, hc: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		called = true
		return nil, reset
	})}, red: redact.New(testToken)}
	body := &closeRecorder{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, "http://api.invalid/bot"+testToken+"/sendMessage", body)
	_, err := bc.Do(req)
	if !errors.Is(err, context.Canceled) || called || !body.closed() || bc.mayHaveArrived(err) {
		t.Fatalf("Do with an ended context = %v (transport called %v, body closed %v); want context.Canceled, unsent", err, called, body.closed())
	}
	assertNoToken(t, err)
}

type closeRecorder struct {
	io.Reader
	mu sync.Mutex
	c  bool
}

func (r *closeRecorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c = true
	return nil
}

func (r *closeRecorder) closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c
}

// answerWith is a transport that answers sendMessage with result itself,
// as Telegram's "ok", and passes every other request on.
type answerWith struct{ result string }

func (a answerWith) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(r.URL.Path, "/sendMessage") {
		return http.DefaultTransport.RoundTrip(r)
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"ok":true,"result":` + a.result + `}`))}, nil
}

// A send Telegram answered "ok" was delivered, whatever its result holds:
// a result that is not a message is no error (sending again would deliver
// it twice), only the message's ID is then unknown, and it is said once.
func TestSendResultUnreadable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, result, id string
		warned           bool
	}{
		{"a message", `{"message_id":7,"date":1,"chat":{"id":1,"type":"private"},"text":"hello"}`, "7", false},
		{"only the ID", `{"message_id":8}`, "8", false},
		{"not a message", `"sent"`, "", true},
		{"an ID that is not a number", `{"message_id":"x"}`, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.HTTPClient = &http.Client{Transport: answerWith{tc.result}} })
			ctx, cancel := context.WithTimeout(context.Background(), waitPeriod)
			defer cancel()
			res, err := h.a.Send(ctx, sendTo("1", platform.TextMessage("hello")))
			if err != nil {
				t.Fatalf("Send = %v; want success", err)
			}
			if res.MessageID != tc.id {
				t.Errorf("MessageID = %q; want %q", res.MessageID, tc.id)
			}
			if n := h.logs.FilterMessageSnippet("its ID is unknown").Len(); (n == 1) != tc.warned || n > 1 {
				t.Errorf("%d warnings of an unknown ID; want one: %v", n, tc.warned)
			}
		})
	}
}
