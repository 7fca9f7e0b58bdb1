package engine

import (
	"time"

	"go.uber.org/zap"

	hctx "github.com/heraldbot/herald/core/context"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// Defaults of the Engine's options.
const (
	DefaultHandlerConcurrency = 64
	DefaultInboundQueueSize   = 256
	DefaultHandlerTimeout     = time.Minute
	DefaultConversationWait   = time.Hour
	DefaultShutdownTimeout    = 30 * time.Second
)

// An Option configures an [Engine]. Options are applied in order; each
// option's doc says what repeating it does.
type Option interface {
	apply(*options)
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

type options struct {
	logger             *zap.Logger
	dispatcher         DispatcherConfig
	adapters           []platform.Adapter
	middleware         []sender.SenderDecorator
	customChain        bool
	senderConfig       sender.DefaultConfig
	rateLimits         map[string]sender.RateLimitConfig
	metrics            *sender.Metrics
	deadLetters        *sender.DeadLetterStore
	journal            journal.Journal
	state              stateOptions
	handlerConcurrency int
	inboundQueueSize   int
	handlerTimeout     time.Duration
	conversationWait   time.Duration
	shutdownTimeout    time.Duration
	onError            func(*Context, error)
	fallback           Handler
	handlerMiddleware  []Middleware
	prefixes           []string
	botUsername        string
	cancelCommand      string // WithCancelCommand's command, or ""
	cancelReply        string
	replyTexts         hctx.ReplyTexts
	textsSet           bool
}

// withDefaults returns o with each setting left unset given its default.
func (o options) withDefaults() options {
	if o.logger == nil {
		o.logger = zap.NewNop()
	}
	if len(o.prefixes) == 0 {
		o.prefixes = []string{"/"}
	}
	if o.handlerConcurrency <= 0 {
		o.handlerConcurrency = DefaultHandlerConcurrency
	}
	if o.inboundQueueSize <= 0 {
		o.inboundQueueSize = DefaultInboundQueueSize
	}
	if o.handlerTimeout <= 0 {
		o.handlerTimeout = DefaultHandlerTimeout
	}
	if o.conversationWait <= 0 {
		o.conversationWait = DefaultConversationWait
	}
	if o.shutdownTimeout <= 0 {
		o.shutdownTimeout = DefaultShutdownTimeout
	}
	if !o.textsSet {
		o.replyTexts = hctx.DefaultReplyTexts
	}
	if o.deadLetters == nil {
		o.deadLetters = sender.NewDeadLetterStore(0)
		o.deadLetters.SetLogger(o.logger) // a store of the engine's own logs its drops to the engine's log
	}
	return o
}

// WithReplyTexts sets the words Context.ReplySuccess and ReplyError add
// to a reply (core/context's DefaultReplyTexts, "✅ " and "⚠️ ", unless
// set): each field is used as given, an empty Apology meaning a plain
// "Sorry, something went wrong.". Repeated use keeps the last.
func WithReplyTexts(t ReplyTexts) Option {
	return optionFunc(func(o *options) { o.replyTexts, o.textsSet = t, true })
}

// WithLogger sets the engine's logger; handlers get it, with the event's
// fields, from Context.Logger, and the default sender chain logs each send
// to it. A nil logger means zap.NewNop(), the default. Repeated use keeps
// the last.
func WithLogger(l *zap.Logger) Option {
	return optionFunc(func(o *options) { o.logger = l })
}

// WithDispatcherConfig configures the OutboundDispatcher that sends every
// reply (see [DispatcherConfig]; its zero value takes the defaults). If
// cfg.Recover is nil, the engine logs recovered panics. Repeated use keeps
// the last.
func WithDispatcherConfig(cfg DispatcherConfig) Option {
	return optionFunc(func(o *options) { o.dispatcher = cfg })
}

// WithAdapter adds a platform adapter. Repeated use adds more; their names
// must differ.
func WithAdapter(a platform.Adapter) Option {
	return optionFunc(func(o *options) {
		if a != nil {
			o.adapters = append(o.adapters, a)
		}
	})
}

// WithSenderMiddleware replaces the default sender chain — its retries,
// rate limits (the adapter's published budget included), timeouts,
// logging and metrics — with the given decorators, wrapped around every
// adapter's Sender; the first listed is the outermost, as in sender.Chain.
// The engine's own bookkeeping stays around them: Stats().Sends counts
// every send and failed sends go to the dead letters, so a Retry you give
// should sit inside no decorator that hides a send's end. Repeated use
// appends, inside the ones given before. Nil decorators are skipped.
func WithSenderMiddleware(ds ...sender.SenderDecorator) Option {
	return optionFunc(func(o *options) {
		o.customChain = true
		o.middleware = append(o.middleware, ds...)
	})
}

// WithSenderConfig configures the default sender chain wrapped around every
// adapter's Sender: sender.Default(cfg), that is
// Metrics → Logging → Counters → DeadLetters → Retry → RateLimit → Timeout →
// Recover.
// Fields left nil are filled by the engine: Logger with the engine's
// logger, Counters and DeadLetters with the engine's own (read through
// Stats and DeadLetters), Metrics with the one given to [WithMetrics].
// Repeated use keeps the last.
func WithSenderConfig(cfg sender.DefaultConfig) Option {
	return optionFunc(func(o *options) { o.senderConfig = cfg })
}

// WithRateLimit sets the rate limits of the sends to one adapter, by its
// name, in the default sender chain. An adapter's limits are the first
// set of: its WithRateLimit, the RateLimit of [WithSenderConfig], and the
// budget its platform publishes ([platform.LimitedAdapter]: Telegram's is
// sender.TelegramLimits()); none if none is set. A zero RateLimitConfig is
// not set; sender.RateLimitConfig{Off: true} turns limiting off for the
// adapter, its published budget included. Repeated use for one adapter
// keeps the last.
func WithRateLimit(adapterName string, cfg sender.RateLimitConfig) Option {
	return optionFunc(func(o *options) {
		if o.rateLimits == nil {
			o.rateLimits = make(map[string]sender.RateLimitConfig)
		}
		o.rateLimits[adapterName] = cfg
	})
}

// WithMetrics records sends in m (through the default sender chain) and
// exposes the engine's inbound and outbound dispatcher statistics through
// it. Repeated use keeps the last.
func WithMetrics(m *sender.Metrics) Option {
	return optionFunc(func(o *options) { o.metrics = m })
}

// WithDeadLetterStore makes the engine keep failed sends in store instead
// of a store of its own with the default capacity (1000). Repeated use
// keeps the last.
func WithDeadLetterStore(store *sender.DeadLetterStore) Option {
	return optionFunc(func(o *options) { o.deadLetters = store })
}

// WithHandlerConcurrency bounds how many events are handled at once, across
// chats; events of one chat are always handled one at a time. n <= 0 means
// 64. Repeated use keeps the last.
func WithHandlerConcurrency(n int) Option {
	return optionFunc(func(o *options) { o.handlerConcurrency = n })
}

// WithInboundQueueSize bounds how many events one chat may have waiting for
// its handlers; HandleEvent refuses more with an error wrapping
// ErrQueueFull. n <= 0 means 256. Repeated use keeps the last.
func WithInboundQueueSize(n int) Option {
	return optionFunc(func(o *options) { o.inboundQueueSize = n })
}

// WithHandlerTimeout bounds how long the handlers of one event (all
// together) may run: their context (Context.Context) ends with
// context.DeadlineExceeded after d of running time. Time spent waiting in
// Next or Prompt does not count: a conversation waits as long as its own
// bound (WithConversationWait). d <= 0 means one minute. Repeated use
// keeps the last.
func WithHandlerTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.handlerTimeout = d })
}

// WithConversationWait bounds each wait in Context.Next and Prompt whose
// ctx has no deadline of its own: after d, Next returns
// context.DeadlineExceeded (the user never answered). A ctx with a
// deadline, longer or shorter, bounds the wait instead. d <= 0 means one
// hour. Repeated use keeps the last.
func WithConversationWait(d time.Duration) Option {
	return optionFunc(func(o *options) { o.conversationWait = d })
}

// WithShutdownTimeout sets how long Run lets pending handlers and replies
// finish after its context ends, before it interrupts them. d <= 0 means
// 30s. Repeated use keeps the last.
func WithShutdownTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.shutdownTimeout = d })
}

// WithOnError sets a function called after the engine logged a handler's
// error or recovered panic (a *HandlerPanicError), with the handler's
// Context; use it to tell the user, for instance with c.ReplyError(err).
// It runs on the handling goroutine, before the next handler. Repeated use
// keeps the last.
func WithOnError(f func(c *Context, err error)) Option {
	return optionFunc(func(o *options) { o.onError = f })
}

// WithFallback sets a handler for events no matcher accepts. Repeated use
// keeps the last.
func WithFallback(h Handler) Option {
	return optionFunc(func(o *options) { o.fallback = h })
}

// WithCommandPrefixes sets the prefixes that start a command; the default
// is "/". Repeated use keeps the last; empty prefixes are ignored.
func WithCommandPrefixes(prefixes ...string) Option {
	return optionFunc(func(o *options) {
		o.prefixes = o.prefixes[:0]
		for _, p := range prefixes {
			if p != "" {
				o.prefixes = append(o.prefixes, p)
			}
		}
	})
}

// WithBotUsername sets the bot's username, without "@": commands addressed
// to another bot ("/start@OtherBot") then match no command matcher. Without
// it, a command matches whatever bot it names. Repeated use keeps the last.
func WithBotUsername(name string) Option {
	return optionFunc(func(o *options) { o.botUsername = name })
}

// WithJournal runs the engine on j instead of a journal of its own that
// keeps nothing (journal.NewLocal(nil)). Package cluster's journals keep,
// on NATS JetStream, every event the engine takes until its handling
// ended and every send until its outcome is final, with the sends that
// failed for good, so that a crash loses nothing: cluster.Open for one
// process, cluster.OpenShared for one bot over several (see
// journal.Journal).
//
// With such a journal, HandleEvent records an event before it returns, so
// an adapter tells the platform an event was taken only once it is
// recorded; Reply, Send and Edit record the send before they return its
// Future — a handler's own send in one process is kept by its event's
// record instead (journal.Send.Covered), which then stays until the
// send's outcome is final. At start, Run takes up what j holds: the dead
// letters, then the sends not done, each chat's in order, then the events
// whose handling did not end. A handler run again on such an event repeats its effects
// with the same ids (the event's ID and their number), which j
// recognizes: a send is not made twice, and its Future is that of the
// send made before — so a handler run again must do the same effects in
// the same order, as conversations (Next, Prompt) do (else ErrDiverged).
//
// While j refuses (unreachable, full), events are refused with an error
// wrapping ErrJournal (the platform keeps them, where it can), and a
// handling it cut short runs again once j records; the outage is logged
// once each way. A journal serves one engine. Repeated use keeps the
// last; nil means the default.
func WithJournal(j journal.Journal) Option {
	return optionFunc(func(o *options) { o.journal = j })
}
