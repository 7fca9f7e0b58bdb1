package main

import (
	"testing"
	"time"

	"github.com/heraldbot/herald/internal/testmain"
)

// The end-to-end tests spend most of their time waiting on real time
// (takeovers, outages, Telegram's budget), so the package lasts as long
// as its longest chain of them: the queue starts them longest first,
// e2eParallel at a time (or -parallel's value). TestMain sets it up.
var queue testmain.Queue

// runParallel makes t a parallel test that starts in its turn, expect
// being about how long it runs alone.
func runParallel(t *testing.T, expect time.Duration) {
	t.Helper()
	queue.Run(t, expect)
}
