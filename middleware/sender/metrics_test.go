package sender_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

func TestMetricsRecordsSends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		m, err := sender.NewMetrics(reg)
		if err != nil {
			t.Fatal(err)
		}
		r := &recorder{reply: func(_ context.Context, n int, req platform.SendRequest) error {
			time.Sleep(100 * time.Millisecond)
			switch {
			case req.Target.ID == "blocked":
				return platform.Permanent(errors.New("blocked"))
			case req.Target.ID == "flaky" && n == 4:
				return errFlaky
			}
			return nil
		}}
		s := sender.Chain(sender.Measure(m), sender.Retry(noJitter(3, 300*time.Millisecond, time.Second)))(r)
		send := func(platformName, chat string) {
			rq := req(chat)
			rq.Platform = platformName
			_, _ = s.Send(context.Background(), rq)
		}
		send("telegram", "a")       // ok, 1 attempt, 0.1s
		send("telegram", "a")       // ok, 1 attempt, 0.1s
		send("telegram", "blocked") // permanent, 1 attempt, 0.1s
		send("onebot", "flaky")     // ok, 2 attempts, 0.1+0.3+0.1 = 0.5s

		const want = `
# HELP herald_sends_total Sends through the sender middleware, by platform and final outcome (ok, canceled, permanent, rate_limited, timeout, error).
# TYPE herald_sends_total counter
herald_sends_total{outcome="canceled",platform="onebot"} 0
herald_sends_total{outcome="canceled",platform="telegram"} 0
herald_sends_total{outcome="error",platform="onebot"} 0
herald_sends_total{outcome="error",platform="telegram"} 0
herald_sends_total{outcome="ok",platform="onebot"} 1
herald_sends_total{outcome="ok",platform="telegram"} 2
herald_sends_total{outcome="permanent",platform="onebot"} 0
herald_sends_total{outcome="permanent",platform="telegram"} 1
herald_sends_total{outcome="rate_limited",platform="onebot"} 0
herald_sends_total{outcome="rate_limited",platform="telegram"} 0
herald_sends_total{outcome="timeout",platform="onebot"} 0
herald_sends_total{outcome="timeout",platform="telegram"} 0
# HELP herald_send_attempts Attempts a send took, the first included.
# TYPE herald_send_attempts histogram
herald_send_attempts_bucket{le="1"} 3
herald_send_attempts_bucket{le="2"} 4
herald_send_attempts_bucket{le="3"} 4
herald_send_attempts_bucket{le="4"} 4
herald_send_attempts_bucket{le="5"} 4
herald_send_attempts_bucket{le="7"} 4
herald_send_attempts_bucket{le="10"} 4
herald_send_attempts_bucket{le="+Inf"} 4
herald_send_attempts_sum 5
herald_send_attempts_count 4
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "herald_sends_total", "herald_send_attempts"); err != nil {
			t.Fatal(err)
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		durations := map[string][2]float64{} // platform → count, sum
		for _, mf := range mfs {
			if mf.GetName() != "herald_send_duration_seconds" {
				continue
			}
			for _, mt := range mf.GetMetric() {
				h := mt.GetHistogram()
				durations[mt.GetLabel()[0].GetValue()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
			}
		}
		if got := durations["telegram"]; got[0] != 3 || got[1] < 0.2999 || got[1] > 0.3001 {
			t.Errorf("telegram durations (count, sum) = %v; want 3, 0.3s", got)
		}
		if got := durations["onebot"]; got[0] != 1 || got[1] < 0.4999 || got[1] > 0.5001 {
			t.Errorf("onebot durations (count, sum) = %v; want 1, 0.5s (retries included)", got)
		}
	})
}

func TestMetricsRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := sender.NewMetrics(reg); err != nil {
		t.Fatal(err)
	}
	m, err := sender.NewMetrics(reg)
	if m != nil || !errors.Is(err, sender.ErrAlreadyRegistered) {
		t.Fatalf("second NewMetrics = %v, %v; want nil, ErrAlreadyRegistered", m, err)
	}
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("error %v does not wrap prometheus.AlreadyRegisteredError", err)
	}
}

func TestMetricsPartialRegistrationUndone(t *testing.T) {
	reg := prometheus.NewRegistry()
	clash := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "herald_send_attempts", Help: "Attempts a send took, the first included."})
	reg.MustRegister(clash)
	if _, err := sender.NewMetrics(reg); !errors.Is(err, sender.ErrAlreadyRegistered) {
		t.Fatalf("NewMetrics = %v; want ErrAlreadyRegistered", err)
	}
	// The metrics NewMetrics registered before the clash were taken back:
	// once the clash is gone, registering works.
	reg.Unregister(clash)
	if _, err := sender.NewMetrics(reg); err != nil {
		t.Fatalf("NewMetrics after the clash was removed = %v", err)
	}
}

func TestMetricsOtherRegisterError(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "herald_sends_total", Help: "different labels"}))
	_, err := sender.NewMetrics(reg)
	if err == nil || errors.Is(err, sender.ErrAlreadyRegistered) || !strings.HasPrefix(err.Error(), "sender: ") {
		t.Fatalf("NewMetrics with an inconsistent metric = %v; want a sender: error that is not ErrAlreadyRegistered", err)
	}
}

func TestMetricsNilRegisterer(t *testing.T) {
	m, err := sender.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sender.Measure(m)(&recorder{}).Send(context.Background(), req("1")); err != nil {
		t.Fatal(err)
	}
	if err := m.Register(prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})); err != nil {
		t.Fatalf("Register without a registry = %v; want nil", err)
	}
	var nilMetrics *sender.Metrics
	r := &recorder{}
	if got := sender.Measure(nilMetrics)(r); got != platform.Sender(r) {
		t.Fatalf("nil Metrics' decorator = %T; want the sender unchanged", got)
	}
}
