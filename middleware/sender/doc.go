// Package sender holds Herald's sender middleware: decorators that wrap a
// [platform.Sender] to add metrics, logging, statistics, dead letters,
// retries, rate limits and per-attempt timeouts, and [Default], which builds
// them into one chain in the documented order.
//
// A [SenderDecorator] is a plain function from Sender to Sender, as
// net/http middleware is a function from Handler to Handler; [Chain] composes
// decorators so that the first one listed is the outermost.
//
// # The default order
//
// [Default] builds, from the outside in:
//
//	Metrics → Logging → Counters → DeadLetters → Retry → RateLimit → Timeout → Recover → platform sender
//
// and each position is chosen for a reason:
//
//   - Metrics is outermost, so a send's duration includes its retries,
//     backoff and rate-limit waits: the cost a caller actually paid. It counts
//     each send once, with its final outcome.
//   - Logging writes one line per send with the final outcome and the number
//     of attempts, not one line per attempt.
//   - Counters counts sends, deliveries, attempts and retries once per send,
//     and sits outside DeadLetters so it can count what DeadLetters recorded.
//   - DeadLetters sits outside Retry so it sees final outcomes only: a send
//     that failed and then succeeded on a retry is not a dead letter; a send
//     whose retries ran out, that failed permanently, or whose context ended
//     (a forced shutdown) is.
//   - Retry re-enters RateLimit on every attempt, so retries spend rate
//     tokens like first attempts do, and a retry cannot jump the queue of a
//     flooded chat.
//   - RateLimit sits above Timeout, so time spent waiting for a token does not
//     eat into an attempt's timeout; it sees the platform's retry-after
//     errors directly and pauses the chat's limiter for the time asked.
//   - Timeout bounds each single attempt; because it sits under Retry,
//     every attempt gets a fresh deadline derived from the send's own
//     context, never an already expired one.
//   - Recover is innermost: a panicking platform sender becomes a permanent
//     error, which every decorator above sees as a failed send, so nothing
//     vanishes in a panic.
//
// # Observing sends
//
// Metrics, Logging, Counters and DeadLetters are built on [Observe]: a
// decorator that calls a function once per send, when the send is over,
// with its [Outcome] (request, result, error, attempts, duration). Write a
// decorator of your own that records sends the same way; see
// ExampleObserve.
//
// # The send's progress
//
// Every layer of a send reads and updates one [platform.Progress] in the
// send's context: Retry counts the attempts in it, RateLimit keeps the
// tokens it reserved, the observers read from it when the send started
// and how many attempts it took. Without a Progress in the context (a
// chain called directly), the first layer that needs one adds it.
//
// # Waiting without a worker
//
// Called directly, Retry and RateLimit wait in place: the caller's
// goroutine sleeps. Under the engine's OutboundDispatcher a send's
// Progress is resumable, and they pause the send instead:
// [platform.Progress.Wait] returns a [*platform.PauseError], which every
// layer above returns unchanged (Observe records nothing for it). The
// dispatcher frees the chat's worker for other chats and runs the send
// again when the wait is over; every layer then carries on from the
// Progress. In Default's order, and in any chain where Timeout sits below
// Retry, waits, attempts, outcomes, logs and metrics are the same either
// way — a send waiting out a 30-second retry-after just no longer holds one
// of MaxInflight workers. A Timeout placed above Retry bounds each run
// rather than the whole send; the dispatcher's SendTimeout bounds each run
// too, and its MaxLifetime the whole. A platform's own sender may pause
// the same way (Telegram's between the parts of a long message): RateLimit
// then lets the resumed send through without new tokens, and Retry carries
// on the same attempt.
//
// A decorator of your own that sits outside Retry or RateLimit and acts on
// errors should use Observe, or, if it must see every run, return an
// error for which platform.PauseOf reports true unchanged: the send is
// not over.
//
// # Outcomes
//
// Logging and Metrics classify a send's final error with [OutcomeOf] into
// [OutcomeOK], [OutcomeCanceled], [OutcomePermanent], [OutcomeRateLimited],
// [OutcomeTimeout] and [OutcomeError].
//
// # Concurrency
//
// Every decorator returned by this package, and every Sender it builds, is
// safe for concurrent use. None of them starts a goroutine: rate limiters
// are evicted by a sweep that runs inside sends, so there is nothing to stop.
package sender
