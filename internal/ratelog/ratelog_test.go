package ratelog

import (
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestFirstThenCount(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zap.DebugLevel)
		l := New(zap.New(core), time.Second)
		for range 1000 {
			l.Warn("bad frame", zap.Int("bytes", 3))
		}
		if n := logs.Len(); n != 1 {
			t.Fatalf("%d lines for 1000 within the interval; want 1", n)
		}
		l.Warn("other")
		if n := logs.Len(); n != 2 {
			t.Fatalf("another message was suppressed: %d lines", n)
		}
		time.Sleep(time.Second)
		l.Warn("bad frame", zap.Int("bytes", 4))
		all := logs.AllUntimed()
		if len(all) != 3 {
			t.Fatalf("%d lines; want 3", len(all))
		}
		ctx := all[2].ContextMap()
		if ctx["suppressed"] != int64(999) || ctx["bytes"] != int64(4) {
			t.Fatalf("summary line fields = %v; want suppressed 999, bytes 4", ctx)
		}
		time.Sleep(time.Second)
		l.Warn("bad frame")
		if _, ok := logs.AllUntimed()[3].ContextMap()["suppressed"]; ok {
			t.Fatal("a line after a quiet interval says some were suppressed")
		}
	})
}

func TestNilAndDisabled(t *testing.T) {
	var l *Logger
	l.Warn("nothing") // must not panic
	core, logs := observer.New(zap.ErrorLevel)
	l = New(zap.New(core), 0)
	l.Warn("below the level")
	l.Error("written")
	if logs.Len() != 1 {
		t.Fatalf("%d lines; want 1", logs.Len())
	}
}

func TestKeysBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(zap.NewNop(), time.Second)
		core, logs := observer.New(zap.InfoLevel)
		l.log = zap.New(core)
		for i := range 2 * maxKeys {
			l.Info(string(rune('a' + i)))
		}
		if len(l.keys) > maxKeys {
			t.Fatalf("%d keys kept; bound %d", len(l.keys), maxKeys)
		}
		if logs.Len() != maxKeys {
			t.Fatalf("%d lines; want %d", logs.Len(), maxKeys)
		}
	})
}
