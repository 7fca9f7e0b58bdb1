package adaptertest

import "time"

// SetPromptly makes d the suite's bound on how long Send and Run may take
// to react; call it before the suite runs, in a test's own process.
func SetPromptly(d time.Duration) { promptly = d }
