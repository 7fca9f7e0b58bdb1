package embedded

import (
	"errors"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// The warnings the server gives each time it opens a store a crash left
// are logged at info level; other warnings stay warnings.
func TestCrashRecoveryIsNotAWarning(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	l := zapLogger{s: zap.New(core).Sugar()}
	l.Warnf("Filestore [%s] Stream state outdated, last block has additional entries, will rebuild", "IN")
	l.Warnf("Filestore [%s] TTL state is outdated; attempting to recover using linear scan (seq %d to %d)", "IN", 1, 2)
	l.Warnf("Filestore [%s] Recovering stream state from index errored: %v", "OUT_herald", errors.New("prior state file"))
	l.Warnf("Filestore [%s] Stream state checksum did not match", "IN")
	l.Warnf("Filestore [%s] Recovering stream state from index errored: %v", "OUT_herald", errors.New("corrupt state file"))
	if n := logs.FilterLevelExact(zap.InfoLevel).Len(); n != 3 {
		t.Errorf("%d info lines; want 3: %v", n, logs.All())
	}
	if n := logs.FilterLevelExact(zap.WarnLevel).Len(); n != 2 {
		t.Errorf("%d warn lines; want 2: %v", n, logs.All())
	}
	if got := logs.All()[2].Message; got != "nats: Filestore [OUT_herald] Recovering stream state from index errored: prior state file" {
		t.Errorf("logged %q", got)
	}
}
