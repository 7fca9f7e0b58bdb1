package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// The dispatcher metrics are Stats' numbers under the same names: one
// vocabulary from Stats to Prometheus.
func TestDispatcherMetricsAreStats(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := sender.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.New()
	e, err := engine.New(engine.WithAdapter(mem), engine.WithMetrics(m),
		engine.WithSenderConfig(sender.DefaultConfig{Retry: sender.RetryConfig{MaxAttempts: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	e.OnMessage(func(c *engine.Context) error {
		c.ReplyText("a")
		c.ReplyText("b")
		return nil
	})
	mem.FailNext("1", platform.Permanent(fmt.Errorf("refused")))
	mem.PanicNext("2", "boom")
	for _, chat := range []string{"1", "2", "3"} {
		if err := e.HandleEvent(mem.Say(memory.Private(chat), memory.User("u", "U"), "hi")); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	stats := map[string]engine.DispatcherStats{"outbound": e.Stats().Outbound, "inbound": e.Stats().Handlers}
	if st := stats["outbound"]; st.Completed != 6 || st.Failed != 2 || st.Submitted != 6 {
		t.Fatalf("outbound stats %+v; want 6 submitted and completed, 2 failed (the sender chain recovers the panic)", st)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{} // "name/dispatcher" → value
	for _, mf := range families {
		if !strings.HasPrefix(mf.GetName(), "herald_dispatcher_") {
			continue
		}
		for _, mt := range mf.GetMetric() {
			v := mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
			got[mf.GetName()+"/"+mt.GetLabel()[0].GetValue()] = v
		}
	}
	for name, st := range stats {
		for metric, want := range map[string]float64{
			"herald_dispatcher_submitted_total": float64(st.Submitted),
			"herald_dispatcher_rejected_total":  float64(st.Rejected),
			"herald_dispatcher_completed_total": float64(st.Completed),
			"herald_dispatcher_failed_total":    float64(st.Failed),
			"herald_dispatcher_panicked_total":  float64(st.Panicked),
			"herald_dispatcher_queued":          float64(st.Queued),
			"herald_dispatcher_running":         float64(st.Running),
			"herald_dispatcher_waiting":         float64(st.Waiting),
			"herald_dispatcher_chats":           float64(st.Chats),
		} {
			if v, ok := got[metric+"/"+name]; !ok || v != want {
				t.Errorf("%s{dispatcher=%q} = %v (found %v); Stats says %v", metric, name, v, ok, want)
			}
		}
	}
}
