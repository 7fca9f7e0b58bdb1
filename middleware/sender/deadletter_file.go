package sender

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/heraldbot/herald/internal/errwire"
	"github.com/heraldbot/herald/platform"
)

// deadLetterJSON is one dead letter in JSON: its error written down (see
// package errwire) — its text, whether it was permanent, the wait it
// asked for and the errors callers branch on that it matched.
type deadLetterJSON struct {
	Request  platform.SendRequest `json:"request"`
	Attempts int                  `json:"attempts"`
	errwire.Error
	At time.Time `json:"at"`
}

// MarshalJSON encodes dl without its ID: its error as its text, whether
// it was permanent ([platform.IsPermanent]), the wait it asked for, and
// which of the errors callers branch on it matched ([platform.ErrBlocked],
// [platform.ErrMaybeDelivered] and the others of platform and context).
func (dl DeadLetter) MarshalJSON() ([]byte, error) {
	return json.Marshal(deadLetterJSON{Request: dl.Request, Attempts: dl.Attempts, Error: errwire.Encode(dl.Err, errwire.Sentinels), At: dl.At})
}

// UnmarshalJSON decodes what MarshalJSON wrote: the error comes back as an
// error with the saved text, permanent if it was, and matching the errors
// it matched. A letter without a target chat is refused with an error
// wrapping ErrBadDeadLetters.
func (dl *DeadLetter) UnmarshalJSON(b []byte) error {
	var j deadLetterJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Request.Target.ID == "" {
		return fmt.Errorf("%w: no target chat", ErrBadDeadLetters)
	}
	*dl = DeadLetter{Request: j.Request, Attempts: j.Attempts, Err: j.Decode(errwire.Sentinels), At: j.At}
	return nil
}

// Save writes the dead letters of s to w, oldest first, one JSON object a
// line (see [DeadLetter.MarshalJSON]), and leaves them in s; a process
// that stops can keep them for the next to Load and replay.
func (s *DeadLetterStore) Save(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, dl := range s.List() {
		if err := enc.Encode(dl); err != nil {
			return fmt.Errorf("sender: saving dead letters: %w", err)
		}
	}
	return nil
}

// ErrBadDeadLetters is wrapped by Load's error for input that is not what
// Save writes.
var ErrBadDeadLetters = errors.New("sender: not a dead-letter file")

// Load reads dead letters written by Save from r and adds them to s in
// their order (so the store's capacity and byte bound hold: the oldest
// may be dropped), and returns how many it added. Each letter's error comes back as an
// error with the saved text, permanent if it was. On input that is not
// Save's, Load stops at the first bad line and returns an error wrapping
// ErrBadDeadLetters with the letters before it added.
func (s *DeadLetterStore) Load(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20) // a letter may carry an uploaded file
	n := 0
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var dl DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &dl); err != nil {
			if errors.Is(err, ErrBadDeadLetters) {
				return n, fmt.Errorf("%w: line %d: no target chat", ErrBadDeadLetters, line)
			}
			return n, fmt.Errorf("%w: line %d: %w", ErrBadDeadLetters, line, err)
		}
		s.Add(dl)
		n++
	}
	if err := sc.Err(); err != nil {
		return n, fmt.Errorf("sender: loading dead letters: %w", err)
	}
	return n, nil
}
