package testmain

import (
	"flag"
	"testing"
)

// Under -fuzz, -parallel is the number of fuzzing processes: neither
// SetUp nor Parallel changes it, and a queue then leaves its tests to the
// testing package.
func TestFuzzingLeavesParallelAlone(t *testing.T) {
	before := flag.Lookup("test.parallel").Value.String()
	if err := flag.Set("test.fuzz", "FuzzSomething"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = flag.Set("test.fuzz", "")
		_ = flag.Set("test.parallel", before)
	})
	_ = flag.Set("test.parallel", "2")
	var q Queue
	q.SetUp(5)
	if q.limit != 0 {
		t.Errorf("SetUp under -fuzz set a limit of %d; want none", q.limit)
	}
	if got := flag.Lookup("test.parallel").Value.String(); got != "2" {
		t.Errorf("-parallel under -fuzz is %s after SetUp; want 2", got)
	}
}
