package telegram

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

var (
	_ platform.CallbackAnswerer = (*Adapter)(nil)
	_ platform.ChatActor        = (*Adapter)(nil)
	_ platform.InlineAnswerer   = (*Adapter)(nil)
	_ platform.Downloader       = (*Adapter)(nil)
)

// Button presses and their answers.
const (
	// autoAnswerAfter is how long after a press arrived a run answers it
	// empty itself when nothing answered it: Telegram's clients show the
	// button busy until an answer comes, and Telegram refuses answers
	// that come much later ("query is too old").
	autoAnswerAfter = 10 * time.Second
	// pressMemory is how long the adapter remembers a press, to answer
	// it at most once.
	pressMemory = 2 * time.Minute
	// answerTimeout bounds one answerCallbackQuery of the run's own.
	answerTimeout = 5 * time.Second
	// maxAnswerText is the longest text of an answer, in characters.
	maxAnswerText = 200
	// autoCheckoutAfter is how long after a pre-checkout query arrived a
	// run refuses it itself when nothing answered it: Telegram cancels a
	// payment whose query is not answered within 10 s.
	autoCheckoutAfter = 8 * time.Second
	// lateCheckoutMessage is the reason shown for an order the run
	// refused itself.
	lateCheckoutMessage = "The order could not be confirmed in time. Please try again."
)

// queryKind is the kind of query a [pressTracker] tracks: a button press
// or a pre-checkout query. Both must be answered, once, within seconds.
type queryKind uint8

const (
	queryCallback    queryKind = iota // answerCallbackQuery
	queryPreCheckout                  // answerPreCheckoutQuery
)

// pressTracker remembers the queries the adapter handed on that Telegram
// waits for the bot to answer — button presses (callback query IDs) and
// pre-checkout queries — and whether each was answered, so that each is
// answered at most once: by the engine (AnswerCallback,
// AnswerPreCheckout) or, when nothing answered it in time, by the run.
// It outlives runs and is safe for concurrent use.
type pressTracker struct {
	mu   sync.Mutex
	byID map[string]*pressState
	wake chan struct{} // a press was added: the run looks at its deadline
}

type pressState struct {
	kind     queryKind
	arrived  time.Time
	answered bool // or being answered
}

func newPressTracker() *pressTracker {
	return &pressTracker{byID: make(map[string]*pressState), wake: make(chan struct{}, 1)}
}

// add notes that the query id of kind arrived at now, unanswered, unless
// it is known, and forgets the queries older than pressMemory.
func (t *pressTracker) add(id string, kind queryKind, now time.Time) {
	t.mu.Lock()
	for k, p := range t.byID {
		if now.Sub(p.arrived) > pressMemory {
			delete(t.byID, k)
		}
	}
	if t.byID[id] == nil {
		t.byID[id] = &pressState{kind: kind, arrived: now}
	}
	t.mu.Unlock()
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// forget drops the query id if it was not answered: it was not handed on
// after all, and comes again.
func (t *pressTracker) forget(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byID[id]; p != nil && !p.answered {
		delete(t.byID, id)
	}
}

// claim marks the query id answered and reports whether it was not
// already; a query the tracker does not know (from before a restart) is
// claimed too.
func (t *pressTracker) claim(id string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p == nil {
		t.byID[id] = &pressState{arrived: now, answered: true}
		return true
	}
	if p.answered {
		return false
	}
	p.answered = true
	return true
}

// release marks the query id unanswered again after an answer that failed
// for a reason that may pass.
func (t *pressTracker) release(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if p := t.byID[id]; p != nil {
		p.answered = false
	}
}

// dueQuery is a query the run answers itself.
type dueQuery struct {
	id   string
	kind queryKind
}

// dueQueries claims and returns the unanswered queries whose time is up
// at now, after(kind) after their arrival, and returns when the next one
// is due (zero if none is waiting).
func (t *pressTracker) dueQueries(now time.Time, after func(queryKind) time.Duration) (qs []dueQuery, next time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, p := range t.byID {
		if p.answered {
			continue
		}
		at := p.arrived.Add(after(p.kind))
		if !at.After(now) {
			p.answered = true
			qs = append(qs, dueQuery{id, p.kind})
		} else if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	return qs, next
}

// answerLate answers, until ctx ends, every query nothing answered in
// time: a button press empty, autoAnswer after its arrival, and a
// pre-checkout query refused (Telegram cancels one not answered within
// 10 s anyway, so the user learns why), autoCheckout after. A run calls
// it on a goroutine of its own.
func (a *Adapter) answerLate(ctx context.Context) {
	timer := time.NewTimer(a.autoAnswer)
	timer.Stop()
	defer timer.Stop()
	after := func(k queryKind) time.Duration {
		if k == queryPreCheckout {
			return a.autoCheckout
		}
		return a.autoAnswer
	}
	for {
		qs, next := a.presses.dueQueries(time.Now(), after)
		for _, q := range qs {
			actx, cancel := context.WithTimeout(ctx, answerTimeout)
			var err error
			if q.kind == queryPreCheckout {
				_, err = a.makeRequest(actx, "answerPreCheckoutQuery", tgbotapi.Params{
					"pre_checkout_query_id": q.id, "ok": "false", "error_message": lateCheckoutMessage,
				})
			} else {
				_, err = a.request(actx, "answerCallbackQuery", tgbotapi.NewCallback(q.id, ""))
			}
			cancel()
			switch {
			case err != nil && ctx.Err() == nil && q.kind == queryPreCheckout:
				a.limited.Warn("telegram: refusing a pre-checkout query nothing answered failed", zap.Error(a.red.Error(err)))
			case err != nil && ctx.Err() == nil:
				a.limited.Warn("telegram: answering a callback query failed", zap.Error(a.red.Error(err)))
			case err == nil && q.kind == queryPreCheckout:
				a.log.Warn("telegram: no answer to a pre-checkout query in time; refused the order",
					zap.String("pre_checkout_query_id", q.id), zap.Duration("after", a.autoCheckout))
			case err == nil:
				a.log.Debug("telegram: no answer to a button press in time; answered it empty",
					zap.String("callback_query_id", q.id), zap.Duration("after", a.autoAnswer))
			}
		}
		if !next.IsZero() {
			timer.Reset(time.Until(next))
		}
		select {
		case <-ctx.Done():
			return
		case <-a.presses.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// AnswerCallback answers the button press ev (an EventCallback of this
// adapter) with answerCallbackQuery: a's Text as a notification (an alert
// with Alert), or a's URL to open, or, for the zero answer, nothing but
// the end of the button's busy display. It implements
// platform.CallbackAnswerer and works whether Run runs or not.
//
// A press is answered at most once: a second answer, or one after the run
// answered the press empty itself because nothing answered it within 10 s
// of its arrival (Telegram refuses late answers, and the user would watch
// a busy button meanwhile), fails with a permanent error wrapping
// platform.ErrAlreadyAnswered, before any request. A press without a
// QueryID, of another adapter, or a text over 200 characters is refused
// with a permanent error wrapping platform.ErrInvalidMessage. Telegram's
// refusals are permanent ("query is too old and response timeout expired
// or query ID is invalid", a press from before a restart), a 429 a
// retry-after error, network failures and 5xx retryable; after a
// retryable failure the press counts as unanswered again.
func (a *Adapter) AnswerCallback(ctx context.Context, ev platform.Event, ans platform.CallbackAnswer) error {
	switch {
	case ev.Kind != platform.EventCallback || ev.QueryID == "":
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: not a button press with a QueryID", ev.ID, platform.ErrInvalidMessage))
	case ev.Platform != "" && ev.Platform != a.Name():
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: a press of adapter %q, not of %q", ev.ID, platform.ErrInvalidMessage, ev.Platform, a.Name()))
	case utf16Len(ans.Text) > maxAnswerText:
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: an answer's text of %d characters is over Telegram's %d",
			ev.ID, platform.ErrInvalidMessage, utf16Len(ans.Text), maxAnswerText))
	}
	if !a.presses.claim(ev.QueryID, time.Now()) {
		return platform.Permanent(fmt.Errorf("telegram: answering callback query of event %s: %w", ev.ID, platform.ErrAlreadyAnswered))
	}
	_, err := a.request(ctx, "answerCallbackQuery", tgbotapi.CallbackConfig{
		CallbackQueryID: ev.QueryID, Text: ans.Text, ShowAlert: ans.Alert, URL: ans.URL,
	})
	if err != nil && !platform.IsPermanent(err) {
		a.presses.release(ev.QueryID)
	}
	return a.red.Error(err)
}

// SendChatAction shows action in chat (a chat ID or "@channel"; in its
// topic, Thread, and through its business connection, if it has them)
// with sendChatAction, for 5 s or until the bot's next message arrives
// there, and implements platform.ChatActor. An action Telegram does not know, or
// a chat ID that is neither a number nor an @username, is refused with a
// permanent error wrapping platform.ErrInvalidMessage before any request;
// Telegram's answers map as for sends (4xx permanent, 429 retry-after).
func (a *Adapter) SendChatAction(ctx context.Context, chat platform.Chat, action platform.ChatAction) error {
	if !action.Known() {
		return platform.Permanent(fmt.Errorf("telegram: %w: unknown chat action %q", platform.ErrInvalidMessage, action))
	}
	dest, err := destinationOf(chat)
	if err != nil {
		return platform.Permanent(fmt.Errorf("telegram: %w", err))
	}
	params := tgbotapi.Params{"action": string(action)}
	addChat(params, dest.chat)
	params.AddNonZero("message_thread_id", dest.thread)
	params.AddNonEmpty("business_connection_id", dest.business)
	_, err = a.makeRequest(ctx, "sendChatAction", params)
	return a.red.Error(err)
}

// Inline answers' limits.
const (
	maxInlineResults  = 50
	maxInlineResultID = 64 // bytes
)

// AnswerInline answers the inline query ev (an EventInlineQuery of this
// adapter) with answerInlineQuery, and implements platform.InlineAnswerer.
// Each result becomes an InlineQueryResult: a Message with only text is an
// article (its Title required, the text in its parse mode, at most 4096
// characters); one with one attachment is a photo, gif (an animation),
// video, audio, voice, document or sticker result, by URL (photo_url …,
// with ThumbnailURL or, for a photo or gif, the URL itself as the
// thumbnail; a video by URL needs a ThumbnailURL, a document by URL its
// MIMEType, application/pdf or application/zip) or by FileID (the cached results), with its caption
// (or the Message's Text) in the parse mode. Buttons go under the message
// the result sends. CacheTime is sent as cache_time in whole seconds
// (zero: Telegram asks the bot every time), Personal as is_personal,
// NextOffset as next_offset.
//
// Refused before any request with a permanent error wrapping
// platform.ErrInvalidMessage: an event without a QueryID, more than 50
// results, a result ID that is empty, over 64 bytes or repeated, a result
// without the Title its kind needs, a Message that is not valid, has Data,
// several attachments, a keyboard, an album, or an edit, deletion or
// reply; with one wrapping platform.ErrUnsupported: a video note, or a
// sticker by URL. Telegram's answers map as for sends; a second answer to
// a query is refused by Telegram (permanent).
func (a *Adapter) AnswerInline(ctx context.Context, ev platform.Event, ans platform.InlineAnswer) error {
	if ev.Kind != platform.EventInlineQuery || ev.QueryID == "" {
		return platform.Permanent(fmt.Errorf("telegram: answering event %s: %w: not an inline query with a QueryID", ev.ID, platform.ErrInvalidMessage))
	}
	results, err := inlineResults(ans.Results)
	if err != nil {
		return platform.Permanent(fmt.Errorf("telegram: answering inline query of event %s: %w", ev.ID, err))
	}
	params := tgbotapi.Params{
		"inline_query_id": ev.QueryID,
		"results":         string(results),
		"cache_time":      strconv.Itoa(int(max(ans.CacheTime, 0) / time.Second)),
	}
	params.AddBool("is_personal", ans.Personal)
	params.AddNonEmpty("next_offset", ans.NextOffset)
	_, err = a.makeRequest(ctx, "answerInlineQuery", params)
	return a.red.Error(err)
}

// inlineResults returns rs as the JSON array answerInlineQuery takes.
func inlineResults(rs []platform.InlineResult) ([]byte, error) {
	if len(rs) > maxInlineResults {
		return nil, fmt.Errorf("%w: %d results are over Telegram's %d", platform.ErrInvalidMessage, len(rs), maxInlineResults)
	}
	out := make([]map[string]any, 0, len(rs))
	ids := make(map[string]bool, len(rs))
	for i, r := range rs {
		res, err := inlineResult(r)
		if err == nil && ids[r.ID] {
			err = fmt.Errorf("%w: ID %q used twice", platform.ErrInvalidMessage, r.ID)
		}
		if err != nil {
			return nil, fmt.Errorf("result %d: %w", i, err)
		}
		ids[r.ID] = true
		out = append(out, res)
	}
	return json.Marshal(out)
}

// inlineResult returns r as an InlineQueryResult; see AnswerInline.
func inlineResult(r platform.InlineResult) (map[string]any, error) {
	m := r.Message
	switch {
	case r.ID == "" || len(r.ID) > maxInlineResultID:
		return nil, fmt.Errorf("%w: an ID of %d bytes (1 to %d)", platform.ErrInvalidMessage, len(r.ID), maxInlineResultID)
	case len(m.Attachments) > 1 || m.Album || m.Keyboard != nil || m.EditID != "" || m.DeleteID != "" || m.ReplyToID != "":
		return nil, fmt.Errorf("%w: a result sends a text or one attachment, with buttons, and nothing else", platform.ErrInvalidMessage)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	mode := parseModes[m.ParseMode]
	res := map[string]any{"id": r.ID}
	if r.Title != "" {
		res["title"] = r.Title
	}
	if r.Description != "" {
		res["description"] = r.Description
	}
	if r.ThumbnailURL != "" {
		res["thumbnail_url"] = r.ThumbnailURL
	}
	kb, err := keyboard(m.Buttons)
	if err != nil {
		return nil, err
	}
	if kb != nil {
		res["reply_markup"] = kb
	}
	if len(m.Attachments) == 0 {
		if r.Title == "" {
			return nil, fmt.Errorf("%w: a text result needs a Title", platform.ErrInvalidMessage)
		}
		if n := utf16Len(m.Text); n > maxTextUnits {
			return nil, fmt.Errorf("%w: a result's text of %d characters is over Telegram's %d", platform.ErrInvalidMessage, n, maxTextUnits)
		}
		content := map[string]any{"message_text": m.Text}
		if mode != "" {
			content["parse_mode"] = mode
		}
		res["type"], res["input_message_content"] = "article", content
		return res, nil
	}
	at := m.Attachments[0]
	caption := at.Caption
	switch {
	case len(at.Data) > 0:
		return nil, fmt.Errorf("%w: a result's attachment goes by URL or FileID, not as bytes", platform.ErrInvalidMessage)
	case caption != "" && m.Text != "":
		return nil, fmt.Errorf("%w: a result with an attachment has a caption or a text, not both", platform.ErrInvalidMessage)
	case caption == "":
		caption = m.Text
	}
	if n := utf16Len(caption); n > maxCaptionUnits {
		return nil, fmt.Errorf("%w: caption of %d characters is over Telegram's %d", platform.ErrInvalidMessage, n, maxCaptionUnits)
	}
	if caption != "" {
		if at.Kind == platform.AttachSticker {
			return nil, fmt.Errorf("%w: a sticker has no caption on Telegram", platform.ErrUnsupported)
		}
		res["caption"] = caption
		if mode != "" {
			res["parse_mode"] = mode
		}
	}
	kinds := map[platform.AttachmentKind]struct {
		typ, field  string
		needsTitle  bool
		byURL       bool
		needsThumb  bool
		defaultMIME string
	}{
		platform.AttachPhoto:     {"photo", "photo", false, true, true, ""},
		platform.AttachAnimation: {"gif", "gif", false, true, true, ""},
		platform.AttachVideo:     {"video", "video", true, true, true, "video/mp4"},
		platform.AttachAudio:     {"audio", "audio", true, true, false, ""},
		platform.AttachVoice:     {"voice", "voice", true, true, false, ""},
		platform.AttachDocument:  {"document", "document", true, true, false, ""},
		platform.AttachSticker:   {"sticker", "sticker", false, false, false, ""},
	}
	k, ok := kinds[at.Kind]
	if !ok {
		return nil, fmt.Errorf("%w: Telegram has no inline result of a %s", platform.ErrUnsupported, at.Kind)
	}
	if k.needsTitle && r.Title == "" {
		return nil, fmt.Errorf("%w: a %s result needs a Title", platform.ErrInvalidMessage, at.Kind)
	}
	res["type"] = k.typ
	if at.FileID != "" {
		res[k.field+"_file_id"] = at.FileID
		return res, nil
	}
	if !k.byURL {
		return nil, fmt.Errorf("%w: Telegram sends a %s result by FileID only", platform.ErrUnsupported, at.Kind)
	}
	res[k.field+"_url"] = at.URL
	if k.needsThumb && r.ThumbnailURL == "" {
		if at.Kind == platform.AttachVideo {
			return nil, fmt.Errorf("%w: a video result by URL needs a ThumbnailURL", platform.ErrInvalidMessage)
		}
		res["thumbnail_url"] = at.URL // a photo or GIF is its own thumbnail
	}
	switch mime := at.MIMEType; {
	case at.Kind == platform.AttachDocument && mime != "application/pdf" && mime != "application/zip":
		return nil, fmt.Errorf("%w: a document result by URL needs the MIMEType application/pdf or application/zip, not %q", platform.ErrInvalidMessage, mime)
	case at.Kind == platform.AttachDocument || at.Kind == platform.AttachVideo:
		if mime == "" {
			mime = k.defaultMIME
		}
		res["mime_type"] = mime
	}
	return res, nil
}
