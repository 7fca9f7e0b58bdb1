//go:build unix

package embedded

import "syscall"

// diskFree returns the bytes free for an unprivileged writer on the file
// system holding dir; ok is false when it cannot tell.
func diskFree(dir string) (free int64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), true //nolint:unconvert // the fields' types differ by system
}
