//go:build unix

package embedded

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// lockDir takes an exclusive lock on dir's LOCK file for this process's
// life (or until the returned function runs), refusing with ErrLocked
// when another process holds it. The kernel drops the lock when the
// process ends, however it ends.
func lockDir(dir string) (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("embedded: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("embedded: lock %s: %w", dir, err)
	}
	var once sync.Once
	return func() { once.Do(func() { f.Close() }) }, nil
}
