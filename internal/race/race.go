// Package race tells whether the program was built with the race
// detector (go build -race, go test -race).
//
// Code checks its invariants at run time only then (they cost nothing in
// production builds), and a test whose size is what it proves scales it
// down then: the detector makes every memory access several times as
// costly, and CI runs such a test at its full size without it as well.
package race
