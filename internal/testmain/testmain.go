// Package testmain holds what a package's TestMain sets up before its
// tests run.
package testmain

import (
	"flag"
	"strconv"
)

// Parallel makes n the number of a package's parallel tests that run at
// once, unless the command line sets it (-parallel): for tests that spend
// their time waiting (for a platform's pacing, for takeovers), not
// computing, more than the processors, which is the default. It parses
// the command line's flags; call it from TestMain, before m.Run.
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}
