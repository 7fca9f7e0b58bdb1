package errwire

import (
	"testing"

	"github.com/heraldbot/herald/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
