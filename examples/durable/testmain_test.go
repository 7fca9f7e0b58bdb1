package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if they leave goroutines behind: every engine a
// test starts is shut down before it returns.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
