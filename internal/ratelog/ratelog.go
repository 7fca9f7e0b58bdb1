// Package ratelog writes log lines about something that can happen a great
// many times — a refused event, a bad frame from a peer, a reply refused
// with a full queue — without letting a flood of them flood the log: the
// first occurrence is written at once, later ones within an interval are
// counted, and the next line written says how many were left out.
package ratelog

import (
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// DefaultInterval is a Logger's interval when New is given none.
const DefaultInterval = 10 * time.Second

// maxKeys bounds the messages a Logger keeps state for; messages are
// constant strings in practice, so it is only a safety net.
const maxKeys = 256

// Logger writes at most one line per message per interval to a
// *zap.Logger. Each distinct message text has its own window: the first
// line of a message is written, then, until the interval has passed since,
// lines of the same message are only counted; the first one written after
// that carries a "suppressed" field with the count.
//
// A Logger is safe for concurrent use. The zero value is not usable; a nil
// *Logger logs nothing.
type Logger struct {
	log   *zap.Logger
	every time.Duration

	mu   sync.Mutex
	keys map[string]*window
}

type window struct {
	last       time.Time
	suppressed int
}

// New returns a Logger writing to log (nil means zap.NewNop()), at most
// once per every per message; every <= 0 means DefaultInterval.
func New(log *zap.Logger, every time.Duration) *Logger {
	if log == nil {
		log = zap.NewNop()
	}
	if every <= 0 {
		every = DefaultInterval
	}
	return &Logger{log: log, every: every, keys: make(map[string]*window)}
}

// Warn writes msg with fields at warn level, unless a line with the same
// msg was written less than the interval ago; see [Logger].
func (l *Logger) Warn(msg string, fields ...zap.Field) { l.write(zapcore.WarnLevel, msg, fields) }

// Info is Warn at info level.
func (l *Logger) Info(msg string, fields ...zap.Field) { l.write(zapcore.InfoLevel, msg, fields) }

// Error is Warn at error level.
func (l *Logger) Error(msg string, fields ...zap.Field) { l.write(zapcore.ErrorLevel, msg, fields) }

// Debug is Warn at debug level.
func (l *Logger) Debug(msg string, fields ...zap.Field) { l.write(zapcore.DebugLevel, msg, fields) }

func (l *Logger) write(level zapcore.Level, msg string, fields []zap.Field) {
	if l == nil || !l.log.Core().Enabled(level) {
		return
	}
	n, ok := l.allow(msg, time.Now())
	if !ok {
		return
	}
	ce := l.log.Check(level, msg)
	if ce == nil {
		return
	}
	if n > 0 {
		fields = append(fields[:len(fields):len(fields)], zap.Int("suppressed", n))
	}
	ce.Write(fields...)
}

// allow reports whether a line of msg may be written at now, and how many
// were suppressed since the last one.
func (l *Logger) allow(msg string, now time.Time) (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.keys[msg]
	if w == nil {
		if len(l.keys) >= maxKeys {
			for k, old := range l.keys {
				if now.Sub(old.last) >= l.every {
					delete(l.keys, k)
				}
			}
			if len(l.keys) >= maxKeys {
				return 0, false
			}
		}
		l.keys[msg] = &window{last: now}
		return 0, true
	}
	if now.Sub(w.last) < l.every {
		w.suppressed++
		return 0, false
	}
	n := w.suppressed
	w.last, w.suppressed = now, 0
	return n, true
}
