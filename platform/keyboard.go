package platform

import (
	"fmt"
	"strings"
)

// MaxCallbackData is the most bytes a button's callback data may have on
// Telegram, the strictest platform: a [Keyboard] refuses more.
const MaxCallbackData = 64

// Keyboard builds the rows of inline buttons of an [OutboundMessage]
// (Buttons), checking each button as it is added: text, exactly one of
// data and URL, and callback data of at most MaxData bytes. The first
// problem is kept and returned by Buttons, so a keyboard is built in one
// expression and checked once:
//
//	rows, err := new(platform.Keyboard).
//		Row(platform.DataButton("Yes", "vote:yes"), platform.DataButton("No", "vote:no")).
//		Row(platform.URLButton("Rules", "https://example.com/rules")).
//		Buttons()
//
// The zero value is an empty keyboard with Telegram's limit. A Keyboard
// is not safe for concurrent use.
type Keyboard struct {
	// MaxData is the most bytes of callback data; 0 means
	// MaxCallbackData.
	MaxData int

	rows [][]Button
	err  error
}

// DataButton returns a button that sends an [EventCallback] with data.
func DataButton(text, data string) Button { return Button{Text: text, Data: data} }

// URLButton returns a button that opens url.
func URLButton(text, url string) Button { return Button{Text: text, URL: url} }

// Row adds a row of buttons and returns k. A row without buttons is
// skipped. After the first bad button, Row adds nothing.
func (k *Keyboard) Row(buttons ...Button) *Keyboard {
	if k.err != nil || len(buttons) == 0 {
		return k
	}
	limit := k.MaxData
	if limit <= 0 {
		limit = MaxCallbackData
	}
	r := len(k.rows)
	for c, b := range buttons {
		switch {
		case b.Text == "":
			k.err = fmt.Errorf("%w: button %d,%d: no text", ErrInvalidMessage, r, c)
		case (b.Data == "") == (b.URL == ""):
			k.err = fmt.Errorf("%w: button %d,%d (%q): want exactly one of data and URL", ErrInvalidMessage, r, c, b.Text)
		case len(b.Data) > limit:
			k.err = fmt.Errorf("%w: button %d,%d (%q): callback data of %d bytes is over the limit of %d",
				ErrInvalidMessage, r, c, b.Text, len(b.Data), limit)
		}
		if k.err != nil {
			return k
		}
	}
	k.rows = append(k.rows, append([]Button(nil), buttons...))
	return k
}

// Buttons returns the rows added, or the error of the first bad button,
// wrapping [ErrInvalidMessage]. The rows are the caller's own.
func (k *Keyboard) Buttons() ([][]Button, error) {
	if k.err != nil {
		return nil, k.err
	}
	out := make([][]Button, len(k.rows))
	for i, row := range k.rows {
		out[i] = append([]Button(nil), row...)
	}
	return out, nil
}

// CallbackData joins prefix and args with ":" into a button's callback
// data, such as "vote:yes" from ("vote", "yes"), for a handler matching
// presses by prefix ([Event] CallbackArgs with "vote:"). It fails with an
// error wrapping [ErrInvalidMessage] when the result is over
// MaxCallbackData bytes.
func CallbackData(prefix string, args ...string) (string, error) {
	s := strings.Join(append([]string{prefix}, args...), ":")
	if len(s) > MaxCallbackData {
		return "", fmt.Errorf("%w: callback data %q of %d bytes is over the limit of %d", ErrInvalidMessage, s, len(s), MaxCallbackData)
	}
	return s, nil
}
