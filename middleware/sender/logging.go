package sender

import (
	"context"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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
//	duration     the time the send took from its first run, retries and waits included
//	queued       the time it waited in its chat's queue before (when known)
//	sending      the part of duration spent in the platform's calls (with a Timeout below)
//	waiting      the rest of duration: rate-limit waits and retries' backoffs
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
func Logging(logger *zap.Logger) SenderDecorator { return Observe(logOutcomes(logger)) }

// logOutcomes returns Logging's observer function, nil for a nil logger.
func logOutcomes(logger *zap.Logger) func(context.Context, Outcome) {
	if logger == nil {
		return nil
	}
	return func(_ context.Context, o Outcome) {
		level := zapcore.DebugLevel
		if o.Err != nil {
			level = zapcore.WarnLevel
		}
		ce := logger.Check(level, "sender: send")
		if ce == nil {
			return
		}
		fields := make([]zap.Field, 0, 11)
		fields = append(fields,
			zap.String("platform", o.Request.Platform),
			zap.String("chat", o.Request.Target.ID),
			zap.Duration("duration", o.Duration),
			zap.Duration("queued", o.Queued),
			zap.Duration("sending", o.Sending),
			zap.Duration("waiting", max(o.Duration-o.Sending, 0)),
			zap.Int("attempts", o.Attempts),
			zap.String("outcome", o.Kind()),
		)
		if o.Err != nil {
			fields = append(fields, zap.Error(o.Err))
			if o.DeadLettered {
				fields = append(fields, zap.Bool("dead_letter", true))
			}
		} else {
			fields = append(fields, zap.String("message_id", o.Result.MessageID))
		}
		fields = append(fields, zap.String("text", TextPrefix(o.Request.Message.Text)))
		ce.Write(fields...)
	}
}

// TextPrefix returns what Logging writes of a message's text s: its first
// TextPrefixRunes runes, with "…" appended when s is longer. Code that
// shows sends to an operator (a list of dead letters) cuts them the same.
func TextPrefix(s string) string {
	i := 0
	for j := range s {
		if i == TextPrefixRunes {
			return s[:j] + "…"
		}
		i++
	}
	return s
}
