package engine

import (
	"cmp"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	hctx "github.com/heraldbot/herald/core/context"
	"github.com/heraldbot/herald/internal/command"
	"github.com/heraldbot/herald/internal/handling"
	"github.com/heraldbot/herald/platform"
)

// Errors returned when registering handlers.
var (
	// ErrDuplicateCommand is returned when a command name or alias is
	// already registered at the same priority.
	ErrDuplicateCommand = errors.New("engine: command already registered at this priority")
	// ErrInvalidMatcher is wrapped by errors for a nil handler, an empty
	// command, prefix, keyword or text, or a nil rule.
	ErrInvalidMatcher = errors.New("engine: invalid matcher")
)

// Rule decides whether a matcher accepts an event. Rules must not block and
// must be safe for concurrent use: they run for every event, on the
// handling goroutines. A panicking rule is recovered and reported like a
// panicking handler; its matcher does not accept the event. In And, Or and
// Not, a nil Rule accepts everything.
type Rule func(c *Context) bool

// accepts reports whether r accepts c; a nil rule accepts everything.
func (r Rule) accepts(c *Context) bool { return r == nil || r(c) }

// And returns a rule that accepts an event when every rule does; with no
// rules it accepts everything. Rules are evaluated in order and stop at the
// first refusal.
func And(rules ...Rule) Rule {
	return func(c *Context) bool {
		for _, r := range rules {
			if !r.accepts(c) {
				return false
			}
		}
		return true
	}
}

// Or returns a rule that accepts an event when any rule does; with no rules
// it accepts nothing. Rules are evaluated in order and stop at the first
// acceptance.
func Or(rules ...Rule) Rule {
	return func(c *Context) bool {
		for _, r := range rules {
			if r.accepts(c) {
				return true
			}
		}
		return false
	}
}

// Not returns a rule that accepts what r refuses.
func Not(r Rule) Rule {
	return func(c *Context) bool { return !r.accepts(c) }
}

// IsPrivate accepts events from private chats.
func IsPrivate() Rule {
	return func(c *Context) bool { return c.Chat().Type == platform.ChatPrivate }
}

// IsGroup accepts events from group chats: those whose
// [platform.Chat.IsGroup] is true (not channels).
func IsGroup() Rule {
	return func(c *Context) bool { return c.Chat().IsGroup() }
}

// FromUsers accepts events from the users with the given IDs.
func FromUsers(ids ...string) Rule {
	set := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return func(c *Context) bool {
		_, ok := set[c.From().ID]
		return ok
	}
}

// IsKind accepts events of the given kind.
func IsKind(k platform.EventKind) Rule {
	return func(c *Context) bool { return c.Event().Kind == k }
}

// A MatcherOption configures one registered handler.
type MatcherOption interface {
	applyMatcher(*matcher)
}

type matcherOptionFunc func(*matcher)

func (f matcherOptionFunc) applyMatcher(m *matcher) { f(m) }

// Priority sets the matcher's priority: lower runs first, and matchers of
// equal priority run in registration order. The default is 0; negative
// values are allowed.
func Priority(n int) MatcherOption {
	return matcherOptionFunc(func(m *matcher) { m.priority = n })
}

// Block stops the event's propagation after this matcher's handler ran:
// matchers with a higher priority number do not run. Matchers with the same
// priority still do.
func Block() MatcherOption {
	return matcherOptionFunc(func(m *matcher) { m.block = true })
}

// Description documents the matcher for the help plugin.
func Description(text string) MatcherOption {
	return matcherOptionFunc(func(m *matcher) { m.description = text })
}

// Aliases adds alternative words to a command, prefix, keyword,
// full-match or callback matcher: OnCommand("help", h, Aliases("h", "?")) also answers "/h" and
// "/?". Other matchers ignore it.
func Aliases(words ...string) MatcherOption {
	return matcherOptionFunc(func(m *matcher) { m.words = append(m.words, words...) })
}

// Permission adds a rule the event must also pass. Repeated use requires
// every rule.
func Permission(r Rule) MatcherOption {
	return matcherOptionFunc(func(m *matcher) {
		if r != nil {
			m.rules = append(m.rules, r)
		}
	})
}

// PrivateOnly is shorthand for Permission(IsPrivate()).
func PrivateOnly() MatcherOption { return Permission(IsPrivate()) }

// GroupOnly is shorthand for Permission(IsGroup()).
func GroupOnly() MatcherOption { return Permission(IsGroup()) }

// UsersOnly is shorthand for Permission(FromUsers(ids...)).
func UsersOnly(ids ...string) MatcherOption { return Permission(FromUsers(ids...)) }

// MatcherInfo describes a registered matcher, for help texts.
type MatcherInfo struct {
	// Kind is "command", "message", "prefix", "keyword", "regex",
	// "fullmatch", "event", "callback" or "rule".
	Kind string
	// Words are the command names, prefixes, keywords, texts or callback
	// prefixes, first the main one, then the aliases; for regex, the
	// expression.
	Words []string
	// Priority is the matcher's priority (see Priority).
	Priority int
	// Block says whether the matcher stops lower priorities (see Block).
	Block bool
	// Description is the text given with Description, or "".
	Description string
}

type matcherKind string

const (
	kindCommand   matcherKind = "command"
	kindMessage   matcherKind = "message"
	kindPrefix    matcherKind = "prefix"
	kindKeyword   matcherKind = "keyword"
	kindRegex     matcherKind = "regex"
	kindFullMatch matcherKind = "fullmatch"
	kindEvent     matcherKind = "event"
	kindCallback  matcherKind = "callback"
	kindRule      matcherKind = "rule"
)

type matcher struct {
	kind        matcherKind
	seq         int
	priority    int
	block       bool
	description string
	words       []string // command names, prefixes, keywords or texts; main first
	re          *regexp.Regexp
	eventKind   platform.EventKind
	rule        Rule // the On rule
	rules       []Rule
	handler     Handler      // wrapped in the engine's and the matcher's middleware
	inner       Handler      // wrapped in the matcher's middleware only
	middleware  []Middleware // the matcher's own, from Wrap
}

// input is what the engine learns about an event once, for all matchers.
type input struct {
	cmd       command.Command
	isCommand bool
	isMessage bool
}

// test reports whether m accepts the event of r and what it found.
func (m *matcher) test(r *handling.Run, in *input, botUsername string) (handling.Match, bool) {
	var found handling.Match
	ev := r.Event()
	text := ev.Text
	switch m.kind {
	case kindCommand:
		if !in.isCommand || !in.isMessage || !slices.ContainsFunc(m.words, func(w string) bool { return strings.EqualFold(w, in.cmd.Name) }) {
			return found, false
		}
		if in.cmd.Bot != "" && botUsername != "" && !strings.EqualFold(in.cmd.Bot, botUsername) {
			return found, false
		}
		found = handling.Match{Command: in.cmd.Name, RawArgs: in.cmd.Raw}
	case kindMessage:
		if !in.isMessage {
			return found, false
		}
	case kindPrefix:
		if !in.isMessage {
			return found, false
		}
		i := slices.IndexFunc(m.words, func(w string) bool { return strings.HasPrefix(text, w) })
		if i < 0 {
			return found, false
		}
		found.RawArgs = strings.TrimSpace(text[len(m.words[i]):])
	case kindKeyword:
		if !in.isMessage || !slices.ContainsFunc(m.words, func(w string) bool { return strings.Contains(text, w) }) {
			return found, false
		}
	case kindFullMatch:
		if !in.isMessage || !slices.Contains(m.words, strings.TrimSpace(text)) {
			return found, false
		}
	case kindRegex:
		if !in.isMessage {
			return found, false
		}
		groups := m.re.FindStringSubmatch(text)
		if groups == nil {
			return found, false
		}
		found.Groups = groups
	case kindEvent:
		if ev.Kind != m.eventKind {
			return found, false
		}
	case kindCallback:
		i := slices.IndexFunc(m.words, func(w string) bool {
			rest, ok := ev.CallbackArgs(w)
			return ok && (rest == "" || rest[0] == ':')
		})
		if i < 0 {
			return found, false
		}
		if rest := strings.TrimPrefix(ev.Text[len(m.words[i]):], ":"); rest != "" {
			found.RawArgs, found.Args = rest, strings.Split(rest, ":")
		}
	case kindRule:
		// The On rule runs with the rules below.
	}
	if m.kind == kindCommand || m.kind == kindPrefix {
		found.Args = command.Split(found.RawArgs)
	}
	if m.rule != nil || len(m.rules) > 0 {
		c := hctx.New(r.Ctx(found)) // the rules see what the matcher found
		if m.rule != nil && !m.rule(c) {
			return found, false
		}
		for _, rule := range m.rules {
			if !rule(c) {
				return found, false
			}
		}
	}
	return found, true
}

func (m *matcher) info() MatcherInfo {
	words := slices.Clone(m.words)
	if m.re != nil {
		words = []string{m.re.String()}
	}
	return MatcherInfo{Kind: string(m.kind), Words: words, Priority: m.priority, Block: m.block, Description: m.description}
}

// OnCommand runs h for messages that start with the command name after a
// command prefix ("/" unless set by WithCommandPrefixes), such as
// "/name args" or "/name@BotName args"; names compare without regard to
// case. Use Aliases for other names. The handler's Context has Command,
// Args and RawArgs. Registering a name or alias that is already registered
// at the same priority panics with an error wrapping ErrDuplicateCommand.
//
// Like the other On methods, OnCommand panics, as http.ServeMux.Handle
// does, when the registration is a mistake — a nil handler, an empty or
// malformed name, a duplicate — with an error wrapping ErrInvalidMatcher
// or ErrDuplicateCommand: a bug in the program, found when it starts.
// Engine.Use turns such a panic in a plugin's Register into its error.
func (e *Engine) OnCommand(name string, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindCommand, words: []string{name}, handler: h}, opts)
}

// OnMessage runs h for every new message (platform.EventMessage).
func (e *Engine) OnMessage(h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindMessage, handler: h}, opts)
}

// OnPrefix runs h for messages whose text starts with prefix (or an alias);
// RawArgs and Args hold the rest.
func (e *Engine) OnPrefix(prefix string, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindPrefix, words: []string{prefix}, handler: h}, opts)
}

// OnKeyword runs h for messages whose text contains keyword (or an alias).
func (e *Engine) OnKeyword(keyword string, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindKeyword, words: []string{keyword}, handler: h}, opts)
}

// OnFullMatch runs h for messages whose text, without surrounding space, is
// exactly text (or an alias).
func (e *Engine) OnFullMatch(text string, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindFullMatch, words: []string{text}, handler: h}, opts)
}

// OnRegex runs h for messages whose text matches the regular expression
// expr (Go's RE2 syntax); the handler's Context has the submatches. It
// panics, as regexp.MustCompile does, if expr does not compile.
func (e *Engine) OnRegex(expr string, h Handler, opts ...MatcherOption) {
	re, err := regexp.Compile(expr)
	if err != nil {
		panic(fmt.Errorf("%w: regex %q: %w", ErrInvalidMatcher, expr, err))
	}
	e.register(&matcher{kind: kindRegex, re: re, handler: h}, opts)
}

// OnEvent runs h for events of the given kind, such as
// platform.EventCallback or platform.EventMemberJoined.
func (e *Engine) OnEvent(kind platform.EventKind, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindEvent, eventKind: kind, handler: h}, opts)
}

// OnCallback runs h for presses of buttons whose data is prefix, or
// prefix, ":" and arguments, as platform.CallbackData makes it: for
// "vote:yes:2", OnCallback("vote", h) runs h with RawArgs "yes:2" and Args
// ["yes", "2"]. Answer the press with Context.Answer; one left unanswered
// is answered empty when the handling ends.
func (e *Engine) OnCallback(prefix string, h Handler, opts ...MatcherOption) {
	e.register(&matcher{kind: kindCallback, words: []string{prefix}, handler: h}, opts)
}

// On runs h for events the rule accepts, whatever their kind.
func (e *Engine) On(rule Rule, h Handler, opts ...MatcherOption) {
	if rule == nil {
		panic(fmt.Errorf("%w: nil rule", ErrInvalidMatcher))
	}
	e.register(&matcher{kind: kindRule, rule: rule, handler: h}, opts)
}

// register validates m and adds it to the matcher list, which stays sorted
// by priority and then registration order, or panics with the error that
// says why it cannot. Events being handled keep the list they started with.
func (e *Engine) register(m *matcher, opts []MatcherOption) {
	if err := e.add(m, opts); err != nil {
		panic(err)
	}
}

// add is register returning its error.
func (e *Engine) add(m *matcher, opts []MatcherOption) error {
	if m.handler == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidMatcher)
	}
	for _, o := range opts {
		if o != nil {
			o.applyMatcher(m)
		}
	}
	switch m.kind {
	case kindCommand, kindPrefix, kindKeyword, kindFullMatch, kindCallback:
		for _, w := range m.words {
			if w == "" || m.kind == kindCommand && strings.ContainsFunc(w, func(r rune) bool { return r == '@' || r <= ' ' }) {
				return fmt.Errorf("%w: %s %q", ErrInvalidMatcher, m.kind, w)
			}
		}
	default:
		m.words = nil
	}

	e.regMu.Lock()
	defer e.regMu.Unlock()
	old := *e.matchers.Load()
	if err := e.checkDuplicate(m, old); err != nil {
		return err
	}
	// Wrapped once the matcher is known to be valid, so middleware runs
	// only for handlers that are registered.
	m.inner = chain(m.handler, m.middleware)
	m.handler = chain(m.inner, e.opts.handlerMiddleware)
	m.middleware = nil
	if m.inner == nil || m.handler == nil {
		return fmt.Errorf("%w: a middleware returned a nil handler", ErrInvalidMatcher)
	}
	e.seq++
	m.seq = e.seq
	list := make([]*matcher, 0, len(old)+1)
	list = append(list, old...)
	list = append(list, m)
	slices.SortStableFunc(list, func(a, b *matcher) int { return cmp.Compare(a.priority, b.priority) })
	e.matchers.Store(&list)
	return nil
}

// checkDuplicate refuses a command m whose name or alias is registered at
// m's priority in list.
func (e *Engine) checkDuplicate(m *matcher, list []*matcher) error {
	if m.kind != kindCommand {
		return nil
	}
	for _, o := range list {
		if o.kind != kindCommand || o.priority != m.priority {
			continue
		}
		for _, w := range m.words {
			if slices.ContainsFunc(o.words, func(x string) bool { return strings.EqualFold(x, w) }) {
				return fmt.Errorf("%w: %q at priority %d", ErrDuplicateCommand, w, m.priority)
			}
		}
	}
	return nil
}

// Matchers describes the registered matchers in the order they are tried.
func (e *Engine) Matchers() []MatcherInfo {
	list := *e.matchers.Load()
	infos := make([]MatcherInfo, len(list))
	for i, m := range list {
		infos[i] = m.info()
	}
	return infos
}
