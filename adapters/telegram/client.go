package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/internal/redact"
	"github.com/heraldbot/herald/platform"
)

// boundClient is the tgbotapi.HTTPClient of one API call. The library takes
// no context, so each call gets its own BotAPI whose client binds the call's
// context to the request (a cancelled context aborts the request in
// flight), redacts the token from the errors of the HTTP client (which carry
// the request URL), records the HTTP status, which the library drops, and
// follows the request through net/http/httptrace, to tell a failure before
// the request reached Telegram from one after (see
// [boundClient.mayHaveArrived]).
//
// A boundClient is used by one call on one goroutine; the trace hooks may
// run on the transport's goroutines, hence the atomics.
type boundClient struct {
	ctx    context.Context
	hc     *http.Client
	red    *redact.Redactor // the adapter's: the token
	status int              // HTTP status of the last response, 0 before one

	unsent bool        // Do refused the request: the context had ended
	traced atomic.Bool // the transport reported its progress (GetConn)
	wrote  atomic.Bool // the transport wrote a whole request (WroteRequest without an error)
	trace  httptrace.ClientTrace
}

// Do sends req with the bound context. When that context has ended
// already, it fails without handing req to the transport.
func (c *boundClient) Do(req *http.Request) (*http.Response, error) {
	return c.doTraced(req.WithContext(c.tracedContext()))
}

// tracedContext returns the bound context with the trace that follows the
// request through the transport (see mayHaveArrived). A request made
// with it goes to doTraced as it is.
func (c *boundClient) tracedContext() context.Context {
	c.trace = httptrace.ClientTrace{
		GetConn: func(string) { c.traced.Store(true) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				c.wrote.Store(true)
			}
		},
	}
	return httptrace.WithClientTrace(c.ctx, &c.trace)
}

// doTraced is Do for a request made with tracedContext.
func (c *boundClient) doTraced(req *http.Request) (*http.Response, error) {
	if err := c.ctx.Err(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // as a transport would: it may be an upload's pipe
		}
		c.unsent = true
		return nil, c.red.URLError(&url.Error{Op: urlErrorOp(req.Method), URL: req.URL.String(), Err: err})
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, c.red.URLError(err)
	}
	c.status = resp.StatusCode
	return resp, nil
}

// urlErrorOp is the Op of http.Client's *url.Error for method: "Post" for
// "POST".
func urlErrorOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

// mayHaveArrived reports whether the failed call may have reached Telegram,
// given err, the library's error. It did if an answer came (Telegram or a
// proxy in front of it answered), or if the transport wrote the whole
// request (WroteRequest) before the failure: the connection was reset, the
// answer never came or the context ended while waiting for it. It surely
// did not if the context had ended before the request was handed to the
// transport, if the transport reported its progress (net/http's
// Transport calls GetConn for every request) and never finished writing
// the request (the dial was refused, the name did not resolve, the
// connection broke while writing, the context ended before), or, for a
// transport that reports nothing, if err is a dial or DNS failure. Any
// other failure of a transport that reports nothing may have arrived.
func (c *boundClient) mayHaveArrived(err error) bool {
	switch {
	case c.status != 0 || c.wrote.Load():
		return true
	case c.unsent || c.traced.Load():
		return false
	}
	var oe *net.OpError
	var de *net.DNSError
	return !(errors.As(err, &oe) && (oe.Op == "dial" || oe.Op == "proxyconnect") || errors.As(err, &de))
}

// bot returns a BotAPI for one call bound to ctx. It does no I/O: unlike
// tgbotapi.NewBotAPIWithClient, it does not call getMe.
func (a *Adapter) bot(ctx context.Context) (*tgbotapi.BotAPI, *boundClient) {
	bc := &boundClient{ctx: ctx, hc: a.cfg.HTTPClient, red: a.red}
	b := &tgbotapi.BotAPI{Token: a.cfg.Token, Client: bc}
	b.SetAPIEndpoint(a.cfg.APIEndpoint)
	return b, bc
}

// request sends c and returns the result, with errors mapped by
// [Adapter.failure].
func (a *Adapter) request(ctx context.Context, method string, c tgbotapi.Chattable) (json.RawMessage, error) {
	b, bc := a.bot(ctx)
	resp, err := b.Request(c)
	if err != nil {
		return nil, a.failure(method, err, bc)
	}
	return resp.Result, nil
}

// makeRequest calls method with params, for requests the library has no
// Chattable for (or has one missing parameters, such as setWebhook's
// secret_token).
func (a *Adapter) makeRequest(ctx context.Context, method string, params tgbotapi.Params) (json.RawMessage, error) {
	var result json.RawMessage
	err := a.makeRequestTo(ctx, method, params, true, func(r json.RawMessage) { result = bytes.Clone(r) })
	return result, err
}

// makeRequestTo is makeRequest handing the result to use, which must not
// keep it; checked is post's.
func (a *Adapter) makeRequestTo(ctx context.Context, method string, params tgbotapi.Params, checked bool, use func(json.RawMessage)) error {
	bc := &boundClient{ctx: ctx, hc: a.cfg.HTTPClient, red: a.red}
	if err := a.post(bc, method, params, checked, use); err != nil {
		return a.failure(method, err, bc)
	}
	return nil
}

// upload calls method with params and files: as a multipart upload when
// a file needs one, else with the files' references (URLs, file IDs) as
// parameters, like the library's Request does for a Chattable. Its errors
// are [Adapter.request]'s.
func (a *Adapter) upload(ctx context.Context, method string, params tgbotapi.Params, files []tgbotapi.RequestFile) (json.RawMessage, error) {
	var result json.RawMessage
	err := a.uploadTo(ctx, method, params, files, true, func(r json.RawMessage) { result = bytes.Clone(r) })
	return result, err
}

// uploadTo is upload handing the result to use, which must not keep it;
// checked is post's.
func (a *Adapter) uploadTo(ctx context.Context, method string, params tgbotapi.Params, files []tgbotapi.RequestFile, checked bool, use func(json.RawMessage)) error {
	needsUpload := false
	for _, f := range files {
		needsUpload = needsUpload || f.Data.NeedsUpload()
	}
	if !needsUpload {
		for _, f := range files {
			params[f.Name] = f.Data.SendData()
		}
		return a.makeRequestTo(ctx, method, params, checked, use)
	}
	b, bc := a.bot(ctx)
	resp, err := b.UploadFiles(method, params, files)
	if err != nil {
		return a.failure(method, err, bc)
	}
	use(resp.Result)
	return nil
}

// failure maps err, the library's error for a call to method made through
// bc, into Herald's error kinds with [classify], with the token and secret
// redacted from an [APIError]'s description, and marks it with
// [platform.MaybeDelivered] when method posts a message (sendMessage,
// sendPhoto and the other sends of a file, sendMediaGroup: not an edit
// or a deletion, which a repeat cannot duplicate)
// and the call may have carried it out: it may have reached Telegram
// ([boundClient.mayHaveArrived]) and no answer of Telegram's says it was
// refused. Telegram's own error answers below 500 (a 400, 403, 429) are
// refusals; a 5xx, an answer that is not Bot API JSON (a proxy's error
// page), a reset connection, an answer that never came (a timeout, the
// context's end while waiting) leave the outcome open.
func (a *Adapter) failure(method string, err error, bc *boundClient) error {
	cerr := classify(method, err, bc.status)
	var ae *APIError
	if errors.As(cerr, &ae) {
		// A description may echo the request (a proxy's, a local Bot API
		// server's): callers read it through errors.As.
		ae.Description = a.red.String(ae.Description)
	}
	if postsMessage(method) && bc.mayHaveArrived(err) && !refusedByTelegram(cerr) {
		return platform.MaybeDelivered(cerr)
	}
	return cerr
}

// postsMessage reports whether method posts a new message, which a repeat
// would post twice.
func postsMessage(method string) bool {
	switch method {
	case "sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendVoice",
		"sendAnimation", "sendSticker", "sendVideoNote", "sendMediaGroup", "sendInvoice",
		"sendPaidMedia", "sendPoll", "sendDice", "sendLocation", "sendVenue", "sendContact",
		"sendGame", "sendChecklist", "copyMessage", "copyMessages", "forwardMessage", "forwardMessages":
		return true
	}
	return false
}

// refusedByTelegram reports whether err, a classified error, is the Bot
// API's answer that it did not carry the call out: an error answer with
// a code from 400 to 499.
func refusedByTelegram(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code >= 400 && ae.Code < 500
}
