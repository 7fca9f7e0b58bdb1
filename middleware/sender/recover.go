package sender

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// ErrSenderPanicked is wrapped by the error [Recover] returns for a send
// whose sender panicked.
var ErrSenderPanicked = errors.New("sender: platform sender panicked")

// Recover returns a decorator that turns a panic in the sender below into a
// failed send: a permanent error (no retry can cure a bug) that wraps
// [ErrSenderPanicked], and the panic value when it is an error. The
// decorators outside it then see an ordinary failure, so the send is
// logged, counted, measured and kept as a dead letter like any other; the
// panic's value and stack go to logger at error level (nil: not logged).
// A sender that calls runtime.Goexit is not recovered.
//
// [Default] puts Recover innermost, right above the platform sender.
func Recover(logger *zap.Logger) SenderDecorator {
	if logger == nil {
		logger = zap.NewNop()
	}
	return func(next platform.Sender) platform.Sender {
		return &recoverSender{next: next, log: logger}
	}
}

type recoverSender struct {
	next platform.Sender
	log  *zap.Logger
}

func (s *recoverSender) Send(ctx context.Context, req platform.SendRequest) (res platform.SendResult, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		s.log.Error("sender: platform sender panicked",
			zap.String("platform", req.Platform), zap.String("chat", req.Target.ID),
			zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
		if perr, ok := r.(error); ok {
			err = fmt.Errorf("%w: %w", ErrSenderPanicked, perr)
		} else {
			err = fmt.Errorf("%w: %v", ErrSenderPanicked, r)
		}
		res, err = platform.SendResult{}, platform.Permanent(err)
	}()
	return s.next.Send(ctx, req)
}
