package sender

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/heraldbot/herald/platform"
)

// deadLetterJSON is one dead letter in JSON: the error becomes its text,
// whether it was permanent, and the kinds of error callers branch on.
type deadLetterJSON struct {
	Request        platform.SendRequest `json:"request"`
	Attempts       int                  `json:"attempts"`
	Err            string               `json:"error,omitempty"`
	Permanent      bool                 `json:"permanent,omitempty"`
	Blocked        bool                 `json:"blocked,omitempty"`
	MaybeDelivered bool                 `json:"maybe_delivered,omitempty"`
	At             time.Time            `json:"at"`
}

// MarshalJSON encodes dl without its ID: its error as its text, whether
// it was permanent ([platform.IsPermanent]), and whether it matched
// [platform.ErrBlocked] or [platform.ErrMaybeDelivered].
func (dl DeadLetter) MarshalJSON() ([]byte, error) {
	j := deadLetterJSON{Request: dl.Request, Attempts: dl.Attempts, At: dl.At}
	if dl.Err != nil {
		j.Err, j.Permanent = dl.Err.Error(), platform.IsPermanent(dl.Err)
		j.Blocked, j.MaybeDelivered = errors.Is(dl.Err, platform.ErrBlocked), errors.Is(dl.Err, platform.ErrMaybeDelivered)
	}
	return json.Marshal(j)
}

// UnmarshalJSON decodes what MarshalJSON wrote: the error comes back as an
// error with the saved text, permanent if it was, and matching
// [platform.ErrBlocked] and [platform.ErrMaybeDelivered] if it did. A
// letter without a target chat is refused with an error wrapping
// ErrBadDeadLetters.
func (dl *DeadLetter) UnmarshalJSON(b []byte) error {
	var j deadLetterJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	if j.Request.Target.ID == "" {
		return fmt.Errorf("%w: no target chat", ErrBadDeadLetters)
	}
	*dl = DeadLetter{Request: j.Request, Attempts: j.Attempts, At: j.At}
	if j.Err != "" {
		saved := &savedError{text: j.Err}
		if j.Blocked {
			saved.kinds = append(saved.kinds, platform.ErrBlocked)
		}
		if j.MaybeDelivered {
			saved.kinds = append(saved.kinds, platform.ErrMaybeDelivered)
		}
		dl.Err = saved
		if j.Permanent {
			dl.Err = platform.Permanent(dl.Err)
		}
	}
	return nil
}

// savedError is a dead letter's error read back: its text, matching the
// kinds of error it matched when it was saved.
type savedError struct {
	text  string
	kinds []error
}

func (e *savedError) Error() string { return e.text }

// Is reports whether target is one of the kinds e matched.
func (e *savedError) Is(target error) bool { return slices.Contains(e.kinds, target) }

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
