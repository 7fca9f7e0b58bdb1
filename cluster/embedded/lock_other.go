//go:build !unix

package embedded

// lockDir does not lock on this system: two processes must not be given
// one directory.
func lockDir(string) (func(), error) { return func() {}, nil }
