package sender

import (
	"context"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/heraldbot/herald/infra/resume"
	"github.com/heraldbot/herald/platform"
)

// TextPrefixRunes is how many runes of a message's text Logging writes.
const TextPrefixRunes = 32

// Logging returns a decorator that writes one line per send to logger when
// the send is over: at Debug level on success, at Warn level on failure.
//
// The line's message is "sender: send" and its fields are:
//
//	platform     SendRequest.Platform
//	chat         SendRequest.Target.ID
//	duration     the time the send took, retries and waits included
//	attempts     how many attempts it took (see [Retry]; 1 without Retry)
//	outcome      [OutcomeOf] the final error
//	message_id   SendResult.MessageID, on success
//	error        the final error, on failure
//	dead_letter  true when a [DeadLetters] decorator below stored the send
//	text         the first TextPrefixRunes runes of the message text, with
//	             "…" appended when cut
//
// Nothing else from the request is logged: not the rest of the text, not
// attachments, captions or buttons. A nil logger logs nothing: Logging(nil)
// returns the sender unchanged.
func Logging(logger *zap.Logger) SenderDecorator {
	return func(next platform.Sender) platform.Sender {
		if logger == nil {
			return next
		}
		return &loggingSender{next: next, log: logger}
	}
}

type loggingSender struct {
	next platform.Sender
	log  *zap.Logger
}

func (s *loggingSender) Send(ctx context.Context, req platform.SendRequest) (platform.SendResult, error) {
	if !s.log.Core().Enabled(zapcore.WarnLevel) && resume.FromContext(ctx) == nil {
		// Nothing this send could produce would be logged (a zap.NewNop()
		// logger, say): skip the clock and the record. A send that can be
		// paused takes the record anyway, so that the decorator owning it
		// stays the same in every run even if the level changes.
		return s.next.Send(ctx, req)
	}
	ctx, rec := withRecord(ctx, s)
	res, err := s.next.Send(ctx, req)
	if rec.paused(s, err) {
		return res, err
	}
	level := zapcore.DebugLevel
	if err != nil {
		level = zapcore.WarnLevel
	}
	ce := s.log.Check(level, "sender: send")
	if ce == nil {
		return res, err
	}
	fields := make([]zap.Field, 0, 8)
	fields = append(fields,
		zap.String("platform", req.Platform),
		zap.String("chat", req.Target.ID),
		zap.Duration("duration", time.Since(rec.start)),
		zap.Int("attempts", rec.attemptsOf()),
		zap.String("outcome", OutcomeOf(err)),
	)
	if err != nil {
		fields = append(fields, zap.Error(err))
		if rec.deadLettered.Load() {
			fields = append(fields, zap.Bool("dead_letter", true))
		}
	} else {
		fields = append(fields, zap.String("message_id", res.MessageID))
	}
	fields = append(fields, zap.String("text", textPrefix(req.Message.Text, TextPrefixRunes)))
	ce.Write(fields...)
	return res, err
}

// textPrefix returns the first n runes of s, with "…" appended when s is
// longer.
func textPrefix(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
