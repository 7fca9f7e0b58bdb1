package sender

import (
	"time"

	"go.uber.org/zap"
)

// DefaultAttemptTimeout is the per-attempt timeout [Default] uses when
// DefaultConfig.Timeout is zero.
const DefaultAttemptTimeout = 10 * time.Second

// DefaultConfig configures [Default]. The zero value is a valid
// configuration: retries with their defaults and a 10 s per-attempt
// timeout, without metrics, logging, statistics, dead letters or rate
// limits.
type DefaultConfig struct {
	// Metrics records every send. Nil means no metrics.
	Metrics *Metrics
	// Logger gets one line per send (see Logging). Nil means no logging, as
	// with zap.NewNop().
	Logger *zap.Logger
	// Counters counts sends, attempts, retries and dead letters. Nil means
	// no counting.
	Counters *Counters
	// DeadLetters keeps the sends that failed for good. Nil means they are
	// not kept.
	DeadLetters *DeadLetterStore
	// Retry configures retries; its zero value means Retry's defaults (5
	// attempts, 500 ms to 30 s backoff with 20% jitter, retry-after waits up
	// to 5 minutes).
	Retry RetryConfig
	// RateLimit sets rate limits; its zero value means none here (the
	// engine reads it as "not set", see its WithRateLimit). See
	// TelegramLimits.
	RateLimit RateLimitConfig
	// Timeout bounds each attempt. Zero means DefaultAttemptTimeout (10 s);
	// a negative value means no per-attempt timeout, leaving only the send's
	// own context (the dispatcher's SendTimeout) to bound it.
	Timeout time.Duration
}

// Default returns the decorator chain Herald wraps around each platform
// sender, from the outside in:
//
//	Metrics → Logging → Counters → DeadLetters → Retry → RateLimit → Timeout → Recover → platform sender
//
// The package documentation explains why each one sits where it does.
// Decorators whose configuration is nil or switched off are left out.
func Default(cfg DefaultConfig) SenderDecorator {
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultAttemptTimeout
	}
	return Chain(
		// Metrics → Logging → Counters → DeadLetters, in one layer.
		Observe(observeAll(cfg.Metrics.observer(), logOutcomes(cfg.Logger), cfg.Counters.observer(), keepDeadLetters(cfg.DeadLetters))),
		Retry(cfg.Retry),
		RateLimit(cfg.RateLimit),
		Timeout(timeout),
		Recover(cfg.Logger),
	)
}
