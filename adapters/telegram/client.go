package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// boundClient is the tgbotapi.HTTPClient of one API call. The library takes
// no context, so each call gets its own BotAPI whose client binds the call's
// context to the request (a cancelled context aborts the request in
// flight), redacts the token from the errors of the HTTP client (which carry
// the request URL) and records the HTTP status, which the library drops.
//
// A boundClient is used by one call on one goroutine.
type boundClient struct {
	ctx    context.Context
	hc     *http.Client
	token  string
	status int // HTTP status of the last response, 0 before one
}

// Do sends req with the bound context.
func (c *boundClient) Do(req *http.Request) (*http.Response, error) {
	resp, err := c.hc.Do(req.WithContext(c.ctx))
	if err != nil {
		return nil, redactURLError(err, c.token)
	}
	c.status = resp.StatusCode
	return resp, nil
}

// bot returns a BotAPI for one call bound to ctx. It does no I/O: unlike
// tgbotapi.NewBotAPIWithClient, it does not call getMe.
func (a *Adapter) bot(ctx context.Context) (*tgbotapi.BotAPI, *boundClient) {
	bc := &boundClient{ctx: ctx, hc: a.cfg.HTTPClient, token: a.cfg.Token}
	b := &tgbotapi.BotAPI{Token: a.cfg.Token, Client: bc}
	b.SetAPIEndpoint(a.cfg.APIEndpoint)
	return b, bc
}

// request sends c and returns the result, with errors mapped by
// [classify].
func (a *Adapter) request(ctx context.Context, method string, c tgbotapi.Chattable) (json.RawMessage, error) {
	b, bc := a.bot(ctx)
	resp, err := b.Request(c)
	if err != nil {
		return nil, classify(method, err, bc.status)
	}
	return resp.Result, nil
}

// makeRequest calls method with params, for requests the library has no
// Chattable for (or has one missing parameters, such as setWebhook's
// secret_token).
func (a *Adapter) makeRequest(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	b, bc := a.bot(ctx)
	resp, err := b.MakeRequest(method, params)
	if err != nil {
		return nil, classify(method, err, bc.status)
	}
	return resp.Result, nil
}

// redactedToken replaces the token in redacted text.
const redactedToken = "<token>"

// redact replaces every form of token in s: as it is, path- and
// query-escaped (with upper- or lower-case hex digits), quoted as Go and
// JSON quote it, and, when it is long enough not to match ordinary words
// (a real token's 35 characters are), its secret part after the colon
// alone, which catches any other escaping of the colon. [New] admits only
// tokens whose secret part no escaping changes.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	forms := []string{
		token,
		url.PathEscape(token),
		url.QueryEscape(token),
		lowerHex(url.PathEscape(token)),
		lowerHex(url.QueryEscape(token)),
		strings.Trim(strconv.Quote(token), `"`),
		strings.Trim(strconv.QuoteToASCII(token), `"`),
	}
	if j, err := json.Marshal(token); err == nil {
		forms = append(forms, strings.Trim(string(j), `"`))
	}
	if _, secret, ok := strings.Cut(token, ":"); ok && len(secret) >= minRedactedSecret {
		forms = append(forms, secret)
	}
	for _, t := range forms {
		if t != "" {
			s = strings.ReplaceAll(s, t, redactedToken)
		}
	}
	return s
}

// minRedactedSecret is the shortest secret part [redact] replaces on its
// own.
const minRedactedSecret = 8

// lowerHex returns s with the hex digits of its %XX escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = lowerASCII(b[i+1]), lowerASCII(b[i+2])
			i += 2
		}
	}
	return string(b)
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// redactURLError removes the token from the URL of a *url.Error, which
// http.Client returns with the whole request URL in it.
func redactURLError(err error, token string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: redact(ue.URL, token), Err: ue.Err}
	}
	return err
}

// scrubbedError carries an error whose message had to be redacted.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// scrub is the last line of defence for token hygiene: if err's message
// still contains the token, it returns an error with the token redacted
// that wraps err, so errors.Is and errors.As (and with them the retry
// classification) still work.
func scrub(err error, token string) error {
	if err == nil || token == "" {
		return err
	}
	msg := err.Error()
	if red := redact(msg, token); red != msg {
		return &scrubbedError{msg: red, err: err}
	}
	return err
}
