package executor

import "github.com/heraldbot/herald/internal/race"

// invariant panics with msg if cond is false, in race builds only: the
// checks cost nothing in production builds and catch scheduler bugs in
// every test run under -race, like CockroachDB's util.RaceEnabled checks.
func invariant(cond bool, msg string) {
	if race.Enabled && !cond {
		panic("executor: INVARIANT violated: " + msg)
	}
}
