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
//
// Under -fuzz it does nothing: -parallel is then the number of fuzzing
// processes, which the processors bound.
func Parallel(n int) {
	if _, set := parallelFlag(); !set && !fuzzing() {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// fuzzing reports whether the command line asks to fuzz (-fuzz).
func fuzzing() bool {
	f := flag.Lookup("test.fuzz")
	return f != nil && f.Value.String() != ""
}

// parallelFlag parses the command line's flags if nobody did, and returns
// -parallel's value if the command line sets it.
func parallelFlag() (n int, set bool) {
	if !flag.Parsed() {
		flag.Parse()
	}
	flag.Visit(func(f *flag.Flag) {
		if f.Name == "test.parallel" {
			set = true
			n, _ = strconv.Atoi(f.Value.String())
		}
	})
	return n, set
}
