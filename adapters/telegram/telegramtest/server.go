package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"golang.org/x/time/rate"
)

// ErrClosed is returned by the waiting methods of a [Server] that was closed
// while they waited.
var ErrClosed = errors.New("telegramtest: server closed")

// maxBody bounds a request body (uploads included).
const maxBody = 64 << 20

// An Option configures a [Server] made by [NewServer].
type Option interface {
	apply(*Server)
}

type optionFunc func(*Server)

func (f optionFunc) apply(s *Server) { f(s) }

// WithToken makes the server accept only token; a request with any other
// token is answered with 401 Unauthorized, as Telegram answers a revoked
// token. Without it any non-empty token is accepted. Repeated use keeps the
// last token.
func WithToken(token string) Option {
	return optionFunc(func(s *Server) { s.token = token })
}

// WithBot sets the identity getMe returns and the sender of the bot's own
// messages. The default is a bot with ID 1, first name "Herald Test Bot" and
// username "herald_test_bot". Repeated use keeps the last identity; IsBot is
// always set.
func WithBot(u tgbotapi.User) Option {
	return optionFunc(func(s *Server) { s.bot = u; s.bot.IsBot = true })
}

// WithListener makes [NewServer] serve on ln instead of a new listener on
// 127.0.0.1, so a test can wrap the listener (to count the connections a
// client opens, say); [Server.Close] closes it. It is ignored with
// [InMemory]. Repeated use keeps the last listener.
func WithListener(ln net.Listener) Option {
	return optionFunc(func(s *Server) { s.listener = ln })
}

// WithTLS makes [NewServer] serve HTTPS, with HTTP/2 offered, as the real
// Bot API is reached, on a certificate only [Server.Client] trusts: point
// a bot at both (for Herald's adapter, Config.HTTPClient and
// Config.APIEndpoint). It is ignored with [InMemory].
func WithTLS() Option {
	return optionFunc(func(s *Server) { s.tls = true })
}

// defaultBot is the identity a [Server] reports when no [WithBot] is given.
var defaultBot = tgbotapi.User{ID: 1, IsBot: true, FirstName: "Herald Test Bot", UserName: "herald_test_bot"}

// Server is a fake Telegram Bot API server. Create one with [NewServer] and
// stop it with [Server.Close]; the zero value is not usable. All methods are
// safe for concurrent use.
//
// The server keeps the updates pushed to it until a getUpdates call confirms
// them (by asking for a higher offset), as Telegram does, and records every
// message a bot sent successfully, and every edit of one, with the time it
// was accepted.
type Server struct {
	ts       *httptest.Server // nil in memory
	inMemory bool
	tls      bool           // from WithTLS
	listener net.Listener   // from WithListener, or nil
	inflight sync.WaitGroup // requests served in memory
	token    string
	bot      tgbotapi.User
	channels map[string]int64 // lower-cased "@username" → chat ID; fixed by NewServer
	chanName map[int64]string // chat ID → "@username" as given
	closed   chan struct{}
	once     sync.Once

	mu           sync.Mutex
	changed      chan struct{} // closed and replaced on every change of state
	updates      []storedUpdate
	nextUpdateID int
	epoch        int // ResetUpdateIDs calls so far
	offset       int
	pollKick     chan struct{} // closed when a newer getUpdates starts
	waitingPolls int
	messageIDs   map[int64]int
	callbacks    int
	sent         []SentMessage
	sentTo       map[int64][]int        // the positions in sent of each chat's messages
	current      map[msgKey]SentMessage // every message in sent, edits applied
	edits        []Edit
	answers      []CallbackAnswer
	files        map[string]storedFile // by file ID
	filePaths    map[string]string     // file_path → file ID
	fileSeq      int
	deleted      map[msgKey]bool // messages deleted with deleteMessage
	userMsgs     map[msgKey]bool // users' messages, which the bot may delete
	deletions    []Deletion
	actions      []ChatAction
	inlineSeq    int
	inlineIDs    map[string]bool // inline queries pushed
	inline       []InlineAnswer
	requests     map[string]int
	webhook      WebhookInfo
	rules        []*rule

	calls        []Call
	results      map[string]json.RawMessage // SetResult
	drafts       []Draft
	reactions    []Reaction
	business     map[string]BusinessConnection
	checkoutIDs  map[string]bool // pre-checkout queries pushed
	checkouts    []CheckoutAnswer
	charges      map[string]charge // by telegram_payment_charge_id
	chargeSeq    int
	refunds      []Refund
	menus        []CommandsSet
	joins        map[joinKey]bool // join requests pending
	joinAnswers  []JoinAnswer
	limits       *Limits // from WithLimits, or nil
	chatBuckets  map[int64]*rate.Limiter
	groupBuckets map[int64]*rate.Limiter
	groupMinute  map[int64][]time.Time // the times of a group's messages in the last minute
	throttled    int
}

// upload is a file sent in a multipart request.
type upload struct {
	name string
	data []byte
}

type storedUpdate struct {
	id    int
	raw   json.RawMessage
	epoch int // the number of ResetUpdateIDs calls before it was pushed
}

// NewServer starts a fake Bot API server on 127.0.0.1. The caller must call
// [Server.Close] when done.
func NewServer(opts ...Option) *Server {
	s := &Server{
		bot:          defaultBot,
		closed:       make(chan struct{}),
		changed:      make(chan struct{}),
		pollKick:     make(chan struct{}),
		nextUpdateID: 1,
		messageIDs:   make(map[int64]int),
		current:      make(map[msgKey]SentMessage),
		sentTo:       make(map[int64][]int),
		files:        make(map[string]storedFile),
		filePaths:    make(map[string]string),
		deleted:      make(map[msgKey]bool),
		userMsgs:     make(map[msgKey]bool),
		inlineIDs:    make(map[string]bool),
		requests:     make(map[string]int),
		channels:     make(map[string]int64),
		chanName:     make(map[int64]string),
		results:      make(map[string]json.RawMessage),
		business:     make(map[string]BusinessConnection),
		checkoutIDs:  make(map[string]bool),
		charges:      make(map[string]charge),
		joins:        make(map[joinKey]bool),
		chatBuckets:  make(map[int64]*rate.Limiter),
		groupBuckets: make(map[int64]*rate.Limiter),
		groupMinute:  make(map[int64][]time.Time),
	}
	for _, o := range opts {
		o.apply(s)
	}
	switch {
	case s.inMemory:
		if s.listener != nil {
			_ = s.listener.Close()
		}
	default:
		s.ts = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
		if s.listener != nil {
			_ = s.ts.Listener.Close()
			s.ts.Listener = s.listener
		}
		if s.tls {
			s.ts.EnableHTTP2 = true
			s.ts.StartTLS()
		} else {
			s.ts.Start()
		}
	}
	return s
}

// Close wakes every waiting long poll and slow response, shuts the server
// down and waits for its requests to finish. Methods waiting on the server
// return [ErrClosed]. Close may be called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		s.mu.Lock() // no in-memory request starts after this
		close(s.closed)
		s.mu.Unlock()
		if s.ts != nil {
			s.ts.Close()
		}
		s.inflight.Wait()
	})
}

// URL returns the server's base URL, such as "http://127.0.0.1:40123"
// ("https://…" with [WithTLS]), or "http://telegramtest.invalid" for a
// server made [InMemory], which only [Server.Client] reaches.
func (s *Server) URL() string {
	if s.ts == nil {
		return memoryURL
	}
	return s.ts.URL
}

// Endpoint returns the API endpoint format for the server, URL()+"/bot%s/%s":
// the first %s is the token and the second the method, like
// tgbotapi.APIEndpoint.
func (s *Server) Endpoint() string { return s.URL() + "/bot%s/%s" }

// Bot returns the identity the server reports for getMe.
func (s *Server) Bot() tgbotapi.User { return s.bot }

// notifyLocked wakes everything waiting for a change. s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitUntil waits until cond returns true, calling it again after every
// change of the server's state (an update pushed or confirmed, a request
// received, a message sent). It returns nil when cond is true, ctx's error
// if ctx ends first and [ErrClosed] if the server is closed. cond runs with
// no lock held and may call the server's methods.
//
// Changes that come faster than cond runs are checked together: after a
// call that took d, the next waits at least d, so a cond that copies what
// the server holds (every message sent) keeps within half a processor
// while a bot sends at full speed.
func (s *Server) WaitUntil(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		began := time.Now()
		if cond() {
			return nil
		}
		took := time.Since(began)
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		}
		if took < minPause {
			continue
		}
		// cond runs once more after the pause, also when ctx or the server
		// ends in it: the change may have made it true.
		pause := time.NewTimer(took)
		select {
		case <-pause.C:
		case <-ctx.Done():
		case <-s.closed:
		}
		pause.Stop()
	}
}

// minPause is the shortest pause WaitUntil makes between two calls of its
// cond: a cheaper cond runs again at once.
const minPause = 200 * time.Microsecond

// Requests returns how many requests for method (such as "sendMessage") the
// server has received, failed ones included.
func (s *Server) Requests(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[method]
}

// WaitRequests waits until the server has received at least n requests for
// method. Its errors are [Server.WaitUntil]'s.
func (s *Server) WaitRequests(ctx context.Context, method string, n int) error {
	return s.WaitUntil(ctx, func() bool { return s.Requests(method) >= n })
}

// WebhookInfo is the webhook a bot registered with setWebhook, as
// [Server.Webhook] returns it. Its zero value means no webhook is set. It
// is a copy (AllowedUpdates included): the caller may keep and change it
// without affecting the server.
type WebhookInfo struct {
	// URL is the url sent; empty when no webhook is set.
	URL string
	// SecretToken is the secret_token sent, or empty.
	SecretToken string
	// AllowedUpdates is the allowed_updates list sent, or nil.
	AllowedUpdates []string
	// MaxConnections is the max_connections sent, or 0 when it was not
	// (Telegram then uses 40).
	MaxConnections int
}

// Webhook returns the webhook registered with setWebhook; its URL is empty
// when none is set (none was registered, or deleteWebhook removed it). While
// a webhook is set, getUpdates fails with 409 Conflict, as on Telegram.
func (s *Server) Webhook() WebhookInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.webhook
	w.AllowedUpdates = append([]string(nil), w.AllowedUpdates...)
	return w
}

// methods maps lower-cased method names to Telegram's spelling; the Bot API
// treats method names case-insensitively.
var methods = map[string]string{}

func init() {
	for _, m := range []string{"getMe", "getUpdates", "sendMessage", "sendPhoto", "sendDocument",
		"sendVideo", "sendAudio", "sendVoice", "sendAnimation", "sendSticker", "sendVideoNote", "sendMediaGroup",
		"editMessageText", "editMessageCaption", "deleteMessage", "answerCallbackQuery", "sendChatAction",
		"answerInlineQuery", "getFile", "setWebhook", "deleteWebhook"} {
		methods[strings.ToLower(m)] = m
	}
	for _, m := range methodNames {
		methods[strings.ToLower(m)] = m
	}
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if s.serve(w, r) {
		hangUp(w)
	}
}

// hangUp resets the connection of w, unanswered: the client sees
// "connection reset by peer" once its request was written, as when a proxy
// drops the connection.
func hangUp(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close with RST, not FIN
	}
	_ = conn.Close()
}

// serve answers r on w, or reports that its connection must be reset
// instead of answered ([Fault] Reset and Drop), leaving w unwritten.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) (hangUp bool) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		return s.serveFile(w, r, rest)
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || method == "" {
		writeError(w, http.StatusNotFound, "Not Found", nil)
		return false
	}
	if canon, ok := methods[strings.ToLower(method)]; ok {
		method = canon
	}
	params, files, err := readParams(w, r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "Bad Request: "+err.Error(), nil)
		return false
	}
	authorized := token != "" && (s.token == "" || token == s.token)
	req := Request{Method: method, Params: params}
	req.ChatID, _ = s.chatID(params.Get("chat_id"))
	// The request and its call are recorded with one notification: a
	// WaitUntil woken by the count must find the call too (recorded after
	// it, a wait on Calls missed it until the next change, if any).
	s.mu.Lock()
	s.requests[method]++
	if authorized {
		s.calls = append(s.calls, Call{Method: method, ChatID: req.ChatID, Params: cloneValues(params), At: time.Now()})
	}
	s.notifyLocked()
	s.mu.Unlock()

	if !authorized {
		writeError(w, http.StatusUnauthorized, "Unauthorized", nil)
		return false
	}
	f := s.matchFault(req)
	if f == nil {
		f = s.throttle(req)
	}
	if f != nil {
		if f.Delay > 0 && !s.sleep(r.Context(), f.Delay) {
			return false
		}
		switch {
		case f.Drop:
			return true
		case f.Status != 0 || f.HTML:
			writeFault(w, *f)
			return false
		case f.Reset:
			// Handled as usual, the answer thrown away.
			s.handle(httptest.NewRecorder(), r, method, params, files)
			return true
		}
	}
	s.handle(w, r, method, params, files)
	return false
}

// handle carries out method and answers it on w.
func (s *Server) handle(w http.ResponseWriter, r *http.Request, method string, params url.Values, files map[string]upload) {
	switch method {
	case "getMe":
		writeResult(w, s.bot)
	case "getUpdates":
		s.getUpdates(w, r, params)
	case "sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendVoice", "sendAnimation",
		"sendSticker", "sendVideoNote":
		s.send(w, method, params, files)
	case "sendMediaGroup":
		s.sendMediaGroup(w, params, files)
	case "editMessageText", "editMessageCaption":
		s.edit(w, method, params)
	case "deleteMessage":
		s.deleteMessage(w, params)
	case "answerCallbackQuery":
		s.answerCallback(w, params)
	case "sendChatAction":
		s.sendChatAction(w, params)
	case "answerInlineQuery":
		s.answerInline(w, params)
	case "getFile":
		s.getFile(w, params)
	case "setWebhook":
		s.setWebhook(w, params)
	case "deleteWebhook":
		s.mu.Lock()
		s.webhook = WebhookInfo{}
		if params.Get("drop_pending_updates") == "true" {
			s.updates = nil
		}
		s.notifyLocked()
		s.mu.Unlock()
		writeResult(w, true)
	default:
		if !s.handleExtra(w, method, params) {
			writeError(w, http.StatusNotFound, "Not Found: method not found", nil)
		}
	}
}

// sleep waits for d; it reports false if the request or the server ended
// first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-s.closed:
		return false
	}
}

// readParams reads a request's parameters from its query string and from an
// URL-encoded, multipart or JSON body, as the Bot API accepts all three.
func readParams(w http.ResponseWriter, r *http.Request) (url.Values, map[string]upload, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "multipart/form-data":
		return readMultipart(r)
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			return nil, nil, err
		}
		params := r.URL.Query()
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				params.Set(k, str)
			} else {
				params.Set(k, string(v))
			}
		}
		return params, nil, nil
	default:
		if err := r.ParseForm(); err != nil {
			return nil, nil, err
		}
		return r.Form, nil, nil
	}
}

// readMultipart reads a multipart/form-data body: its fields, after the
// URL's query parameters, and its files, the first of each field. The
// parts are read once, one after the other, into one buffer, as large as
// the request when it says its length (a chunked one grows it): the files
// are cut from it once it is whole. ParseMultipartForm and io.ReadAll grow
// a buffer per file from empty, copying a 4 MiB file's bytes several times.
func readMultipart(r *http.Request) (url.Values, map[string]upload, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, nil, err
	}
	params := r.URL.Query()
	type span struct {
		field, name string
		start, end  int
	}
	var spans []span
	size := int64(64 << 10)
	if r.ContentLength > 0 {
		size = min(r.ContentLength, maxBody) + 1
	}
	all := make([]byte, 0, size)
	for {
		p, err := mr.NextPart()
		if err == io.EOF { // only the closing boundary: a body cut short is an error wrapping io.EOF
			break
		}
		if err != nil {
			return nil, nil, err
		}
		field := p.FormName()
		if field == "" {
			continue
		}
		start := len(all)
		if all, err = appendRead(all, p); err != nil {
			return nil, nil, err
		}
		if p.FileName() == "" {
			params.Add(field, string(all[start:]))
		} else {
			spans = append(spans, span{field, p.FileName(), start, len(all)})
		}
	}
	files := make(map[string]upload)
	for _, sp := range spans {
		if _, ok := files[sp.field]; !ok {
			files[sp.field] = upload{name: sp.name, data: all[sp.start:sp.end:sp.end]}
		}
	}
	return params, files, nil
}

// appendRead appends what r gives until its end to b.
func appendRead(b []byte, r io.Reader) ([]byte, error) {
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

func writeResult(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		OK     bool `json:"ok"`
		Result any  `json:"result"`
	}{true, result})
}

func writeError(w http.ResponseWriter, status int, description string, params *tgbotapi.ResponseParameters) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(tgbotapi.APIResponse{
		Ok: false, ErrorCode: status, Description: description, Parameters: params,
	})
}
