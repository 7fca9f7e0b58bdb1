package telegramtest

import (
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
)

// Request describes a request the server received, as a rule function
// passed to [Server.InjectFunc] sees it. The server makes a new Request for
// each call of a rule and never changes it afterwards; a rule may keep it,
// but must not change Params, which the server goes on reading. The zero
// value is a request with no method, chat or parameters; it matches only
// faults that name neither a method nor a chat.
type Request struct {
	// Method is the Bot API method, such as "sendMessage".
	Method string
	// ChatID is the request's chat_id, or the ID of the channel its
	// chat_id names by username ([WithChannel]); 0 when it has none, or one
	// that is neither a number nor a known username.
	ChatID int64
	// Params holds the request's parameters (uploaded files excluded).
	Params url.Values
}

// Fault is a failure the server answers a request with instead of handling
// it, or, with Reset, after handling it. The zero value matches every
// request and changes nothing.
type Fault struct {
	// Method limits the fault to one method, such as "sendMessage"; empty
	// means every method.
	Method string
	// ChatID limits the fault to requests for one chat; 0 means every
	// request, with or without a chat.
	ChatID int64
	// Times is how many matching requests the fault applies to; 0 means
	// every matching request until the fault is removed.
	Times int
	// Delay is how long the server waits before answering. With Status 0
	// and HTML false the request is then handled normally: a slow response.
	Delay time.Duration
	// Status is the HTTP status and Telegram error_code to answer with, such
	// as 429, 403 or 500; 0 means no error.
	Status int
	// Description is Telegram's description of the error; empty means a
	// description like Telegram's for Status ("Too Many Requests: retry
	// after N" for 429, "Forbidden: bot was blocked by the user" for 403).
	Description string
	// RetryAfter is the retry_after parameter in seconds, for a 429.
	RetryAfter int
	// MigrateToChatID is the migrate_to_chat_id parameter, for a 400 saying
	// a group became a supergroup.
	MigrateToChatID int64
	// NoParameters leaves the parameters object out of the answer, as
	// older Bot API versions did: a retry_after then appears only in the
	// description.
	NoParameters bool
	// HTML answers with an HTML page instead of JSON, as a proxy in front of
	// the API does when the API is down; Status 0 then means 502.
	HTML bool
	// Reset handles the request as usual and then resets the connection
	// instead of answering, as a proxy does that drops the connection
	// right after the Bot API accepted a sendMessage: the message is sent
	// and recorded ([Server.Sent]), but the bot gets "connection reset by
	// peer" (or, through [Server.Client] of a server made [InMemory], an
	// error wrapping [ErrReset]) once its request was written, and cannot
	// tell whether it was. Status and HTML take precedence over it.
	Reset bool
	// Drop resets the connection without handling the request, once it was
	// read: nothing happens, and the bot sees what Reset shows it. It takes
	// precedence over Status, HTML and Reset.
	Drop bool
}

func (f Fault) matches(r Request) bool {
	return (f.Method == "" || f.Method == r.Method) && (f.ChatID == 0 || f.ChatID == r.ChatID)
}

// rule is an injected fault or fault function.
type rule struct {
	fault     Fault
	remaining int // for fault with Times > 0
	fn        func(Request) *Fault
}

// Inject makes the server answer requests matching f with f's failure, for
// f.Times requests or until the returned function is called. Faults are
// checked in the order they were injected and the first that matches
// applies. A request that fails this way is counted by [Server.Requests] but
// has no other effect.
func (s *Server) Inject(f Fault) (remove func()) {
	return s.addRule(&rule{fault: f, remaining: f.Times})
}

// InjectFunc makes the server call fn for every request, in injection
// order with the other faults, and answer with the fault it returns, if not
// nil; the fault's Method, ChatID and Times are ignored. fn may be called
// concurrently, must not block for long and must not call [Server.Inject] or
// [Server.InjectFunc]. The returned function removes fn.
func (s *Server) InjectFunc(fn func(Request) *Fault) (remove func()) {
	return s.addRule(&rule{fn: fn})
}

func (s *Server) addRule(r *rule) func() {
	s.mu.Lock()
	s.rules = append(s.rules, r)
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.removeRuleLocked(r)
	}
}

func (s *Server) removeRuleLocked(r *rule) {
	for i, x := range s.rules {
		if x == r {
			s.rules = append(s.rules[:i:i], s.rules[i+1:]...)
			return
		}
	}
}

// matchFault returns the fault to answer req with, or nil.
func (s *Server) matchFault(req Request) *Fault {
	s.mu.Lock()
	rules := append([]*rule(nil), s.rules...)
	s.mu.Unlock()
	for _, r := range rules {
		if r.fn != nil {
			if f := r.fn(req); f != nil {
				return f
			}
			continue
		}
		if !r.fault.matches(req) {
			continue
		}
		if r.fault.Times <= 0 {
			f := r.fault
			return &f
		}
		s.mu.Lock()
		ok := r.remaining > 0
		if ok {
			r.remaining--
			if r.remaining == 0 {
				s.removeRuleLocked(r)
			}
		}
		s.mu.Unlock()
		if ok {
			f := r.fault
			return &f
		}
	}
	return nil
}

// isSend reports whether method delivers a message to a chat or changes
// one there.
func isSend(method string) bool {
	switch method {
	case "sendMessage", "sendPhoto", "sendDocument", "editMessageText", "editMessageCaption":
		return true
	}
	return false
}

// FloodWait puts a chat under flood control for d, as Telegram does after a
// burst: until d has passed, every sendMessage, sendPhoto, sendDocument,
// editMessageText and editMessageCaption for chatID is answered with 429
// and a retry_after of the seconds left, rounded up. chatID 0 means every
// chat. Accepted messages and edits carry their time ([SentMessage.At],
// [Edit.At]), so a test can check that nothing reached the chat before the
// time was up. The returned function lifts the limit early.
func (s *Server) FloodWait(chatID int64, d time.Duration) (remove func()) {
	until := time.Now().Add(d)
	return s.InjectFunc(func(r Request) *Fault {
		if !isSend(r.Method) || (chatID != 0 && r.ChatID != chatID) {
			return nil
		}
		left := time.Until(until)
		if left <= 0 {
			return nil
		}
		return &Fault{Status: http.StatusTooManyRequests, RetryAfter: retryAfterSeconds(left)}
	})
}

// retryAfterSeconds returns left in whole seconds, rounded up, as
// Telegram's retry_after never asks for less than the wait left.
func retryAfterSeconds(left time.Duration) int {
	return int(math.Ceil(left.Seconds()))
}

// Block makes every send to chatID, and every edit there, fail with 403
// "Forbidden: bot was blocked by the user", until the returned function is
// called.
func (s *Server) Block(chatID int64) (remove func()) {
	return s.InjectFunc(func(r Request) *Fault {
		if !isSend(r.Method) || r.ChatID != chatID {
			return nil
		}
		return &Fault{Status: http.StatusForbidden, Description: "Forbidden: bot was blocked by the user"}
	})
}

// Migrate makes every send to the group oldID, and every edit there, fail
// with 400 and migrate_to_chat_id newID, as Telegram answers after a group
// became a supergroup, until the returned function is called. Sends to
// newID succeed; the group's messages are not carried over, so edits there
// find none of them, as on Telegram, where the supergroup numbers its
// messages afresh.
func (s *Server) Migrate(oldID, newID int64) (remove func()) {
	return s.InjectFunc(func(r Request) *Fault {
		if !isSend(r.Method) || r.ChatID != oldID {
			return nil
		}
		return &Fault{
			Status:          http.StatusBadRequest,
			Description:     "Bad Request: group chat was upgraded to a supergroup chat",
			MigrateToChatID: newID,
		}
	})
}

// proxyPage is what a reverse proxy answers when the API behind it is down.
const proxyPage = "<html>\r\n<head><title>%d %s</title></head>\r\n<body>\r\n<center><h1>%d %s</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"

func writeFault(w http.ResponseWriter, f Fault) {
	status := f.Status
	if f.HTML {
		if status == 0 {
			status = http.StatusBadGateway
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		text := http.StatusText(status)
		_, _ = w.Write([]byte(fmt.Sprintf(proxyPage, status, text, status, text)))
		return
	}
	desc := f.Description
	if desc == "" {
		desc = defaultDescription(status, f.RetryAfter)
	}
	var params *tgbotapi.ResponseParameters
	if !f.NoParameters && (f.RetryAfter != 0 || f.MigrateToChatID != 0) {
		params = &tgbotapi.ResponseParameters{RetryAfter: f.RetryAfter, MigrateToChatID: f.MigrateToChatID}
	}
	writeError(w, status, desc, params)
}

func defaultDescription(status, retryAfter int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "Too Many Requests: retry after " + strconv.Itoa(retryAfter)
	case http.StatusBadRequest:
		return "Bad Request"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden: bot was blocked by the user"
	case http.StatusNotFound:
		return "Not Found"
	case http.StatusConflict:
		return "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
	}
	if t := http.StatusText(status); t != "" {
		return t
	}
	return "Error " + strconv.Itoa(status)
}
