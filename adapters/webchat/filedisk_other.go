//go:build !unix

package webchat

import (
	"errors"
	"os"
)

// diskFile reports that this system keeps no files on disk for the
// store: a file open elsewhere cannot be removed from its directory, so a
// crash would leave it behind. See the unix version.
func diskFile(string, []byte) (*os.File, error) { return nil, errors.ErrUnsupported }
