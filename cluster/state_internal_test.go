package cluster

import (
	"testing"
	"time"
)

func TestStateKeyEscaping(t *testing.T) {
	parallel(t, 0)
	for _, k := range []string{"chat/telegram/-100123/note", "a.b", "sp ace", "*>", "_", "ü", "%2F", "x_41"} {
		e := stateKey(k)
		for i := 0; i < len(e); i++ {
			c := e[i]
			if !(c == '-' || c == '/' || c == '=' || c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
				t.Fatalf("stateKey(%q) = %q holds %q", k, e, c)
			}
		}
		if back, ok := engineKey(e); !ok || back != k {
			t.Errorf("engineKey(stateKey(%q)) = %q, %v", k, back, ok)
		}
	}
	for _, bad := range []string{"_", "_4", "_zz", "a_4g"} {
		if _, ok := engineKey(bad); ok {
			t.Errorf("engineKey(%q) accepted", bad)
		}
	}
	for in, want := range map[time.Duration]time.Duration{0: 0, -1: 0, 1: time.Second, time.Second: time.Second, 1500 * time.Millisecond: 2 * time.Second} {
		if got := ttlOf(in); got != want {
			t.Errorf("ttlOf(%v) = %v; want %v", in, got, want)
		}
	}
}
