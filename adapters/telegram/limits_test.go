package telegram

import (
	"testing"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// The budget the adapter publishes, which the engine applies by default,
// is the one sender.TelegramLimits documents.
func TestLimitsAreTelegramLimits(t *testing.T) {
	a, err := New(Config{Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	var _ platform.LimitedAdapter = a
	if got, want := sender.LimitsOf(a.Limits()), sender.TelegramLimits(); got != want {
		t.Fatalf("LimitsOf(Limits()) = %+v; want TelegramLimits() %+v", got, want)
	}
}
