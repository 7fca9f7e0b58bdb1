//go:build !race

package executor

// raceEnabled is true in race builds (go test -race), which check the
// dispatcher's INVARIANT comments at run time.
const raceEnabled = false
