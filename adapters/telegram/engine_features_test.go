package telegram

import (
	"encoding/json"
	"strconv"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/platform"
)

// Through the engine and the default sender chain, a handler's plain
// Reply lands in the topic of a forum message, goes through the business
// connection of a business message, and the handler reads the update's
// fields from Raw.
func TestEngineRepliesInTopicAndThroughConnection(t *testing.T) {
	rawText := make(chan string, 4)
	b := startTgEngine(t, func(e *engine.Engine) {
		e.OnCommand("where", func(c *engine.Context) error {
			var u struct {
				Message *struct {
					ThreadID int `json:"message_thread_id"`
				} `json:"message"`
				BusinessMessage *struct {
					Connection string `json:"business_connection_id"`
				} `json:"business_message"`
			}
			if err := json.Unmarshal(c.Event().RawJSON(), &u); err != nil {
				return err
			}
			switch {
			case u.Message != nil:
				rawText <- "thread " + strconv.Itoa(u.Message.ThreadID)
			case u.BusinessMessage != nil:
				rawText <- "connection " + u.BusinessMessage.Connection
			}
			c.ReplyText("here")
			return nil
		})
	})
	ctx := waitCtx(t)
	const group, topic = -1001234567890, 23
	b.srv.SendTopicMessage(group, topic, ann, "/where")
	sent, err := b.srv.WaitSent(ctx, group, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].Text != "here" || sent[0].ThreadID != topic || sent[0].Params.Get("message_thread_id") != "23" {
		t.Fatalf("the reply %+v; want it in topic %d", sent[0], topic)
	}
	if got := <-rawText; got != "thread 23" {
		t.Fatalf("the handler read %q from Raw", got)
	}

	customer := tgbotapi.User{ID: 4242, FirstName: "Cy"}
	b.srv.SendBusinessMessage("biz-7", customer, "/where")
	sent, err = b.srv.WaitSent(ctx, 4242, 1)
	if err != nil {
		t.Fatal(err)
	}
	if sent[0].BusinessConnectionID != "biz-7" || sent[0].Params.Get("business_connection_id") != "biz-7" {
		t.Fatalf("the reply %+v; want it through biz-7", sent[0])
	}
	if got := <-rawText; got != "connection biz-7" {
		t.Fatalf("the handler read %q from Raw", got)
	}
}

// A typed membership event reaches an OnEvent handler.
func TestEngineBotBlocked(t *testing.T) {
	blocked := make(chan platform.Event, 1)
	b := startTgEngine(t, func(e *engine.Engine) {
		e.OnEvent(platform.EventBotBlocked, func(c *engine.Context) error {
			blocked <- c.Event()
			return nil
		})
	})
	b.srv.PushMyChatMember(31, tgbotapi.User{ID: 31, FirstName: "Dee"}, "member", "kicked")
	select {
	case ev := <-blocked:
		if ev.Chat.ID != "31" || ev.Member.New != platform.MemberBanned {
			t.Fatalf("event %+v", ev)
		}
	case <-waitCtx(t).Done():
		t.Fatal("no EventBotBlocked")
	}
}
