//go:build !unix

package embedded

// diskFree cannot tell the free space on this system.
func diskFree(string) (int64, bool) { return 0, false }
