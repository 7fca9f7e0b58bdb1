package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/adapters/adaptertest"
	"github.com/heraldbot/herald/adapters/telegram/telegramtest"
	"github.com/heraldbot/herald/platform"
)

// TestConformance runs the shared adapter suite against an adapter in
// polling mode (the default configuration) talking to a telegramtest
// server; the harness also checks that no log line holds the token.
//
// Features: Telegram has every feature the suite checks. Its one limit is
// the length of a text, 4096 characters (longer texts are split into
// several messages, which split_test.go covers). The fake server injects
// every fault: 403 "bot was blocked" (permanent), 429 with retry_after,
// 500 (transient) and a response delayed by an hour (a stall, keyed to
// the send it holds up: see tgPeer.sending).
func TestConformance(t *testing.T) {
	t.Parallel()
	adaptertest.TestAdapter(t, func(t *testing.T) adaptertest.Peer {
		return &tgPeer{h: newHarness(t, nil)}
	}, adaptertest.Features{MaxText: 4096})
}

// TestConformanceWebhook runs the suite against an adapter in webhook mode:
// Run serves the webhook on 127.0.0.1 and registers it with the fake
// server, and users' messages are POSTed to it, with the secret token, as
// Telegram does. Sending is the same as in polling mode.
func TestConformanceWebhook(t *testing.T) {
	t.Parallel()
	adaptertest.TestAdapter(t, func(t *testing.T) adaptertest.Peer {
		h := newHarness(t, func(cfg *Config) {
			cfg.Mode = Webhook
			cfg.Webhook = WebhookConfig{
				Listen:      "127.0.0.1:0",
				Path:        "/hook",
				SecretToken: "conformance-secret",
				URL:         "https://bot.example.com/hook",
			}
		})
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return &tgWebhookPeer{tgPeer: &tgPeer{h: h}, client: &http.Client{Transport: tr}}
	}, adaptertest.Features{MaxText: 4096})
}

// tgWebhookPeer is tgPeer with users' messages POSTed to the adapter's
// webhook instead of queued for getUpdates.
type tgWebhookPeer struct {
	*tgPeer
	client *http.Client
	seq    atomic.Int64 // update IDs of the updates the peer builds itself
}

// Ready waits until Run has registered the webhook and serves it.
func (p *tgWebhookPeer) Ready(ctx context.Context) error {
	return p.h.srv.WaitUntil(ctx, func() bool {
		return p.h.srv.Webhook().URL != "" && p.h.a.WebhookAddr() != nil
	})
}

// Say POSTs the update of a message, as Telegram would; the server knows
// the message, so the bot may react to it.
func (p *tgWebhookPeer) Say(ctx context.Context, chat platform.Chat, from platform.User, text string) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	return p.post(ctx, p.h.srv.UserMessageUpdate(chatID, user, text))
}

// post POSTs u to the webhook as Telegram would, with the next update ID
// if it has none.
func (p *tgWebhookPeer) post(ctx context.Context, u tgbotapi.Update) error {
	addr := p.h.a.WebhookAddr()
	if addr == nil {
		return errors.New("telegram peer: the webhook is not served")
	}
	if u.UpdateID == 0 {
		u.UpdateID = 1_000_000 + int(p.seq.Add(1)) // apart from the server's IDs, which start at 1
	}
	body, err := json.Marshal(u)
	if err != nil {
		return err
	}
	return p.postRaw(ctx, body)
}

// postRaw POSTs the update body to the webhook as Telegram would.
func (p *tgWebhookPeer) postRaw(ctx context.Context, body []byte) error {
	addr := p.h.a.WebhookAddr()
	if addr == nil {
		return errors.New("telegram peer: the webhook is not served")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr.String()+"/hook", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(secretHeader, "conformance-secret")
	resp, err := p.client.Do(req)
	if err != nil {
		return fmt.Errorf("telegram peer: webhook: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("telegram peer: webhook answered %s", resp.Status)
	}
	return nil
}

// SayFile, Press, Query and Choose POST their updates to the webhook.

func (p *tgWebhookPeer) SayFile(ctx context.Context, chat platform.Chat, from platform.User, at platform.Attachment, data []byte) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	return p.post(ctx, p.h.srv.UserFileUpdate(chatID, user, telegramtest.UserFile{
		Kind: string(at.Kind), Name: at.FileName, MIMEType: at.MIMEType, Data: data, Caption: at.Caption,
	}))
}

func (p *tgWebhookPeer) Press(ctx context.Context, chat platform.Chat, from platform.User, messageID, data string) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(messageID)
	if err != nil {
		return fmt.Errorf("telegram peer: message ID %q: %w", messageID, err)
	}
	return p.post(ctx, p.h.srv.CallbackUpdate(chatID, user, id, data))
}

func (p *tgWebhookPeer) Query(ctx context.Context, from platform.User, text string) error {
	_, user, err := ids(platform.Chat{}, from)
	if err != nil {
		return err
	}
	return p.post(ctx, p.h.srv.InlineQueryUpdate(user, text, "sender"))
}

func (p *tgWebhookPeer) Choose(ctx context.Context, from platform.User, resultID, text string) error {
	_, user, err := ids(platform.Chat{}, from)
	if err != nil {
		return err
	}
	return p.post(ctx, tgbotapi.Update{ChosenInlineResult: &tgbotapi.ChosenInlineResult{ResultID: resultID, From: &user, Query: text}})
}

// tgPeer drives a telegramtest server for the suite. User n has the ID
// 1000+n and talks to the bot in the private chat of the same ID; group n
// has the ID -(2000+n).
type tgPeer struct {
	h *harness

	mu     sync.Mutex
	stalls map[string]int // by chat ID: stalls injected, not yet taken by a send
}

// Adapter returns the adapter with its Sender watched for stalls; see
// Inject.
func (p *tgPeer) Adapter() platform.Adapter { return stallingAdapter{p.h.a, p} }

// stallingAdapter is the adapter under test as the suite sees it: the
// real one, whose Sender tells the peer of each send before passing it
// on unchanged, so that an injected stall holds up the send the suite
// made next (see tgPeer.Inject).
type stallingAdapter struct {
	*Adapter
	p *tgPeer
}

func (s stallingAdapter) Sender() platform.Sender {
	next := s.Adapter.Sender()
	return platform.SenderFunc(func(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
		s.p.sending(req)
		return next.Send(ctx, req)
	})
}

// sending makes the server hold up req if a stall waits for its chat:
// every request for the chat that carries req's text, whenever it comes,
// is held until its client gives up.
//
// The stall is taken here, when Send is called, and not by the first
// request to reach the server: the suite ends a held-up send's context
// after a tenth of a second, and on a loaded machine the request may not
// have reached the server by then, nor at all; the stall would then hold
// up the next send, which the suite expects to go through, and a request
// arriving late would be delivered.
func (p *tgPeer) sending(req platform.SendRequest) {
	p.mu.Lock()
	stall := p.stalls[req.Target.ID] > 0
	if stall {
		p.stalls[req.Target.ID]--
	}
	p.mu.Unlock()
	chatID, err := strconv.ParseInt(req.Target.ID, 10, 64)
	if !stall || err != nil {
		return
	}
	text := req.Message.Text
	p.h.srv.InjectFunc(func(r telegramtest.Request) *telegramtest.Fault {
		if r.ChatID == chatID && (r.Params.Get("text") == text || r.Params.Get("caption") == text) {
			return &telegramtest.Fault{Delay: time.Hour}
		}
		return nil
	})
}

// Ready waits for the first getUpdates: Run has learnt the bot's name and
// polls.
func (p *tgPeer) Ready(ctx context.Context) error {
	return p.h.srv.WaitRequests(ctx, "getUpdates", 1)
}

func (p *tgPeer) User(n int) platform.User {
	return platform.User{ID: strconv.Itoa(1000 + n), Name: "User " + strconv.Itoa(n)}
}

func (p *tgPeer) Chat(_ context.Context, n int, typ platform.ChatType) (platform.Chat, error) {
	switch typ {
	case platform.ChatPrivate:
		return platform.Chat{ID: strconv.Itoa(1000 + n), Type: platform.ChatPrivate}, nil
	case platform.ChatGroup:
		id := strconv.Itoa(-(2000 + n))
		return platform.Chat{ID: id, Type: platform.ChatGroup, Title: "Chat " + id}, nil
	}
	return platform.Chat{}, fmt.Errorf("telegram peer: no chats of type %q", typ)
}

func (p *tgPeer) Say(_ context.Context, chat platform.Chat, from platform.User, text string) error {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	userID, err := strconv.ParseInt(from.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram peer: user ID %q: %w", from.ID, err)
	}
	p.h.srv.SendUserMessage(chatID, tgbotapi.User{ID: userID, FirstName: from.Name}, text)
	return nil
}

func (p *tgPeer) Received(ctx context.Context, chat platform.Chat, n int) ([]platform.OutboundMessage, error) {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	sent, err := p.h.srv.WaitSent(ctx, chatID, n)
	msgs := make([]platform.OutboundMessage, len(sent))
	for i, m := range sent {
		msgs[i] = outboundOf(m)
	}
	return msgs, err
}

var _ adaptertest.ShowingPeer = (*tgPeer)(nil)

// Shown reads back the chat's messages as the fake Bot API holds them now,
// edits applied.
func (p *tgPeer) Shown(_ context.Context, chat platform.Chat) ([]platform.OutboundMessage, error) {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	var msgs []platform.OutboundMessage
	for _, m := range p.h.srv.Sent(chatID) {
		now, ok := p.h.srv.Message(chatID, m.MessageID)
		if !ok {
			continue // deleted
		}
		msgs = append(msgs, outboundOf(now))
	}
	return msgs, nil
}

var (
	_ adaptertest.FilePeer   = (*tgPeer)(nil)
	_ adaptertest.PressPeer  = (*tgPeer)(nil)
	_ adaptertest.ActionPeer = (*tgPeer)(nil)
	_ adaptertest.InlinePeer = (*tgPeer)(nil)
)

// ids reads the suite's chat and user as Telegram IDs.
func ids(chat platform.Chat, from platform.User) (int64, tgbotapi.User, error) {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil && chat.ID != "" {
		return 0, tgbotapi.User{}, fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	userID, err := strconv.ParseInt(from.ID, 10, 64)
	if err != nil {
		return 0, tgbotapi.User{}, fmt.Errorf("telegram peer: user ID %q: %w", from.ID, err)
	}
	return chatID, tgbotapi.User{ID: userID, FirstName: from.Name}, nil
}

func (p *tgPeer) SayFile(_ context.Context, chat platform.Chat, from platform.User, at platform.Attachment, data []byte) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	p.h.srv.SendUserFile(chatID, user, telegramtest.UserFile{
		Kind: string(at.Kind), Name: at.FileName, MIMEType: at.MIMEType, Data: data, Caption: at.Caption,
	})
	return nil
}

func (p *tgPeer) Press(_ context.Context, chat platform.Chat, from platform.User, messageID, data string) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(messageID)
	if err != nil {
		return fmt.Errorf("telegram peer: message ID %q: %w", messageID, err)
	}
	p.h.srv.PushCallback(chatID, user, id, data)
	return nil
}

func (p *tgPeer) Answered(ctx context.Context, ev platform.Event) (platform.CallbackAnswer, error) {
	var got platform.CallbackAnswer
	err := p.h.srv.WaitUntil(ctx, func() bool {
		for _, a := range p.h.srv.CallbackAnswers() {
			if a.CallbackQueryID == ev.QueryID {
				got = platform.CallbackAnswer{Text: a.Text, Alert: a.ShowAlert, URL: a.URL}
				return true
			}
		}
		return false
	})
	return got, err
}

func (p *tgPeer) Actions(ctx context.Context, chat platform.Chat, n int) ([]platform.ChatAction, error) {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	var got []platform.ChatAction
	err = p.h.srv.WaitUntil(ctx, func() bool {
		got = got[:0]
		for _, a := range p.h.srv.ChatActions(chatID) {
			got = append(got, platform.ChatAction(a.Action))
		}
		return len(got) >= n
	})
	return got, err
}

func (p *tgPeer) Query(_ context.Context, from platform.User, text string) error {
	_, user, err := ids(platform.Chat{}, from)
	if err != nil {
		return err
	}
	p.h.srv.PushInlineQuery(user, text, "sender")
	return nil
}

func (p *tgPeer) InlineAnswered(ctx context.Context, ev platform.Event) (platform.InlineAnswer, error) {
	a, err := p.h.srv.WaitInlineAnswer(ctx, ev.QueryID)
	if err != nil {
		return platform.InlineAnswer{}, err
	}
	out := platform.InlineAnswer{CacheTime: time.Duration(a.CacheTime) * time.Second, Personal: a.IsPersonal, NextOffset: a.NextOffset}
	for _, r := range a.Results {
		res := platform.InlineResult{ID: r.ID, Title: r.Title, Description: r.Description, ThumbnailURL: r.ThumbnailURL}
		if r.Type == "article" {
			res.Message.Text = r.Text
		} else {
			kind := map[string]platform.AttachmentKind{"gif": platform.AttachAnimation}[r.Type]
			if kind == "" {
				kind = platform.AttachmentKind(r.Type)
			}
			res.Message.Attachments = []platform.Attachment{{Kind: kind, URL: r.URL, FileID: r.FileID, Caption: r.Caption}}
		}
		out.Results = append(out.Results, res)
	}
	return out, nil
}

func (p *tgPeer) Choose(_ context.Context, from platform.User, resultID, text string) error {
	_, user, err := ids(platform.Chat{}, from)
	if err != nil {
		return err
	}
	p.h.srv.PushChosenInlineResult(user, resultID, text)
	return nil
}

func (p *tgPeer) Inject(chat platform.Chat, f adaptertest.Fault) error {
	chatID, err := strconv.ParseInt(chat.ID, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram peer: chat ID %q: %w", chat.ID, err)
	}
	fault := telegramtest.Fault{ChatID: chatID, Times: 1}
	switch f.Kind {
	case adaptertest.FaultPermanent:
		fault.Status, fault.Description = http.StatusForbidden, "Forbidden: bot was blocked by the user"
	case adaptertest.FaultRetryAfter:
		if f.RetryAfter%time.Second != 0 {
			return fmt.Errorf("telegram peer: retry_after %v is not whole seconds: %w", f.RetryAfter, adaptertest.ErrUnsupported)
		}
		fault.Status, fault.RetryAfter = http.StatusTooManyRequests, int(f.RetryAfter/time.Second)
	case adaptertest.FaultTransient:
		fault.Status = http.StatusInternalServerError
	case adaptertest.FaultStall:
		p.mu.Lock()
		if p.stalls == nil {
			p.stalls = map[string]int{}
		}
		p.stalls[chat.ID]++
		p.mu.Unlock()
		return nil // the next send takes it: see sending
	default:
		return fmt.Errorf("telegram peer: fault %v: %w", f.Kind, adaptertest.ErrUnsupported)
	}
	p.h.srv.Inject(fault)
	return nil
}

// outboundOf reads a message the fake server accepted back into an
// OutboundMessage.
func outboundOf(m telegramtest.SentMessage) platform.OutboundMessage {
	var out platform.OutboundMessage
	switch m.ParseMode {
	case "":
	case tgbotapi.ModeHTML:
		out.ParseMode = platform.ParseHTML
	case tgbotapi.ModeMarkdown:
		out.ParseMode = platform.ParseMarkdown
	default:
		out.ParseMode = platform.ParseMode(m.ParseMode) // shows as a mismatch
	}
	if m.ReplyToMessageID != 0 {
		out.ReplyToID = strconv.Itoa(m.ReplyToMessageID)
	}
	switch m.Kind {
	case "text":
		out.Text = m.Text
	default:
		out.Attachments = []platform.Attachment{{
			Kind: platform.AttachmentKind(m.Kind), URL: m.FileURL, Data: m.FileData, FileName: m.FileName, Caption: m.Text,
		}}
	}
	if rk := m.ReplyKeyboard; rk != nil {
		out.Keyboard = &platform.ReplyKeyboard{OneTime: rk.OneTimeKeyboard, Placeholder: rk.InputFieldPlaceholder}
		for _, row := range rk.Keyboard {
			var texts []string
			for _, b := range row {
				texts = append(texts, b.Text)
			}
			out.Keyboard.Rows = append(out.Keyboard.Rows, texts)
		}
	}
	if m.RemoveKeyboard {
		out.Keyboard = &platform.ReplyKeyboard{Remove: true}
	}
	for _, row := range m.Keyboard {
		r := make([]platform.Button, len(row))
		for i, b := range row {
			r[i] = platform.Button{Text: b.Text}
			if b.CallbackData != nil {
				r[i].Data = *b.CallbackData
			}
			if b.URL != nil {
				r[i].URL = *b.URL
			}
		}
		out.Buttons = append(out.Buttons, r)
	}
	return out
}

// Topics, reactions: the peer's topics are threads 100+n of a group.

func (p *tgPeer) Topic(_ context.Context, chat platform.Chat, n int) (platform.Chat, error) {
	chat.Thread = strconv.Itoa(100 + n)
	return chat, nil
}

func (p *tgPeer) SayInTopic(_ context.Context, topic platform.Chat, from platform.User, text string) error {
	chatID, user, thread, err := topicIDs(topic, from)
	if err != nil {
		return err
	}
	p.h.srv.SendTopicMessage(chatID, thread, user, text)
	return nil
}

func (p *tgWebhookPeer) SayInTopic(ctx context.Context, topic platform.Chat, from platform.User, text string) error {
	chatID, user, thread, err := topicIDs(topic, from)
	if err != nil {
		return err
	}
	return p.postRaw(ctx, p.h.srv.TopicMessageUpdate(chatID, thread, user, text))
}

// topicIDs returns the Telegram IDs of a topic and a user.
func topicIDs(topic platform.Chat, from platform.User) (int64, tgbotapi.User, int, error) {
	chatID, user, err := ids(topic, from)
	if err != nil {
		return 0, tgbotapi.User{}, 0, err
	}
	thread, err := strconv.Atoi(topic.Thread)
	if err != nil {
		return 0, tgbotapi.User{}, 0, fmt.Errorf("telegram peer: thread %q: %w", topic.Thread, err)
	}
	return chatID, user, thread, nil
}

func (p *tgPeer) Threads(ctx context.Context, chat platform.Chat, n int) ([]string, error) {
	chatID, _, err := ids(chat, platform.User{ID: "0"})
	if err != nil {
		return nil, err
	}
	sent, err := p.h.srv.WaitSent(ctx, chatID, n)
	out := make([]string, len(sent))
	for i, m := range sent {
		if m.ThreadID != 0 {
			out[i] = strconv.Itoa(m.ThreadID)
		}
	}
	return out, err
}

func (p *tgPeer) React(_ context.Context, chat platform.Chat, from platform.User, messageID, emoji string) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(messageID)
	if err != nil {
		return fmt.Errorf("telegram peer: message ID %q: %w", messageID, err)
	}
	p.h.srv.PushReaction(chatID, id, user, nil, []string{emoji})
	return nil
}

func (p *tgWebhookPeer) React(ctx context.Context, chat platform.Chat, from platform.User, messageID, emoji string) error {
	chatID, user, err := ids(chat, from)
	if err != nil {
		return err
	}
	id, err := strconv.Atoi(messageID)
	if err != nil {
		return fmt.Errorf("telegram peer: message ID %q: %w", messageID, err)
	}
	return p.postRaw(ctx, p.h.srv.ReactionUpdate(chatID, id, user, nil, []string{emoji}))
}

func (p *tgPeer) BotReactions(ctx context.Context, chat platform.Chat, n int) ([]adaptertest.BotReaction, error) {
	chatID, _, err := ids(chat, platform.User{ID: "0"})
	if err != nil {
		return nil, err
	}
	var got []telegramtest.Reaction
	err = p.h.srv.WaitUntil(ctx, func() bool {
		got = p.h.srv.Reactions(chatID)
		return len(got) >= n
	})
	out := make([]adaptertest.BotReaction, len(got))
	for i, r := range got {
		out[i] = adaptertest.BotReaction{MessageID: strconv.Itoa(r.MessageID), Emoji: r.Emoji}
	}
	return out, err
}

var (
	_ adaptertest.TopicPeer    = (*tgPeer)(nil)
	_ adaptertest.ReactionPeer = (*tgWebhookPeer)(nil)
)
