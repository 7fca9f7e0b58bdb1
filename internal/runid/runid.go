// Package runid makes the tokens adapters put in the IDs they give
// events, so that an ID is not one a journal saw handled in an earlier
// run (see platform.Event).
package runid

import (
	"crypto/rand"
	"encoding/hex"
)

// New returns a random token of 12 hexadecimal digits, unlike any other
// run's in practice (48 bits).
func New() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail
	return hex.EncodeToString(b[:])
}
