package memory_test

import (
	"context"
	"errors"
	"testing"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/platform"
)

func TestDeleteAndAnswers(t *testing.T) {
	ctx := context.Background()
	a := memory.New()
	chat, ann := memory.Private("1"), memory.User("1", "Ann")
	res, err := send(a, "1", "bye")
	if err != nil {
		t.Fatal(err)
	}
	del := func(id string) error {
		_, err := a.Sender().Send(ctx, platform.SendRequest{Target: chat, Message: platform.DeleteMessage(id)})
		return err
	}
	if err := del(res.MessageID); err != nil {
		t.Fatalf("delete = %v", err)
	}
	if err := del(res.MessageID); err != nil {
		t.Fatalf("delete repeated = %v; want success, the message is gone", err)
	}
	if err := del("404"); !platform.IsPermanent(err) || !errors.Is(err, memory.ErrNoMessage) {
		t.Fatalf("delete of a message never sent = %v", err)
	}
	if shown := a.Shown("1"); len(shown) != 0 {
		t.Fatalf("shown after the deletion: %+v", shown)
	}
	if _, err := a.Sender().Send(ctx, platform.SendRequest{Target: chat, Message: platform.EditMessage(res.MessageID, "x")}); !errors.Is(err, memory.ErrNoMessage) {
		t.Fatalf("edit of a deleted message = %v", err)
	}

	press := a.PressOn(chat, ann, res.MessageID, "b")
	if press.QueryID == "" {
		t.Fatalf("press without a QueryID: %+v", press)
	}
	if err := a.AnswerCallback(ctx, press, platform.CallbackAnswer{Text: "ok"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AnswerCallback(ctx, press, platform.CallbackAnswer{}); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrAlreadyAnswered) {
		t.Fatalf("second answer = %v", err)
	}
	if got := a.Answers(); len(got) != 1 || got[0].Callback.Text != "ok" {
		t.Fatalf("answers = %+v", got)
	}

	q := a.Query(ann, "cats")
	bad := platform.InlineAnswer{Results: []platform.InlineResult{{ID: "a", Message: platform.TextMessage("x")}, {ID: "a", Message: platform.TextMessage("y")}}}
	if err := a.AnswerInline(ctx, q, bad); !errors.Is(err, platform.ErrInvalidMessage) {
		t.Fatalf("answer with a repeated ID = %v", err)
	}
	if err := a.AnswerInline(ctx, q, platform.InlineAnswer{Results: bad.Results[:1]}); err != nil {
		t.Fatal(err)
	}
	if err := a.AnswerInline(ctx, q, platform.InlineAnswer{}); !errors.Is(err, platform.ErrAlreadyAnswered) {
		t.Fatalf("second inline answer = %v", err)
	}

	f := a.SayFile(chat, ann, platform.Attachment{Kind: platform.AttachVoice, Caption: "hi"}, []byte("opus"))
	at := f.Attachments[0]
	if f.Text != "hi" || at.FileID == "" || at.Size != 4 {
		t.Fatalf("file event %+v", f)
	}
	if _, err := a.Download(ctx, at, 3); !errors.Is(err, platform.ErrFileTooLarge) {
		t.Fatalf("download over the limit = %v", err)
	}
	if b, err := a.Download(ctx, at, 4); err != nil || string(b) != "opus" {
		t.Fatalf("download = %q, %v", b, err)
	}
}
