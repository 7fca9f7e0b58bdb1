package handling

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/heraldbot/herald/platform"
)

// Wait is what a waiting handling waits for: the events from its user (or
// anyone's, with anyone) in its chat.
type Wait struct {
	h        *Handling
	deadline time.Time // when the wait ends with context.DeadlineExceeded
	question int       // the place of Prompt's question, whose failure ends the wait; -1: none
	seq      uint64    // its order among the waits, for the expiry heap's ties
	index    int       // its place in the expiry heap, -1 when not in it
	next     *Wait     // the next wait under the same convKey
	ended    error     // why a resumption was asked for: the deadline, the question
	parked   bool      // in the index, between runs
	messages bool      // it takes only the user's messages (Next with a nil accept)
	anyone   bool      // it takes the events of anyone in the chat
	resuming bool      // a task to resume it is queued
}

// Handling returns the handling that waits.
func (w *Wait) Handling() *Handling { return w.h }

// conv returns the key w waits under.
func (w *Wait) conv() string {
	ev := &w.h.start
	if w.anyone {
		return convKey(ev.Platform, ev.Chat.ID, "")
	}
	return convKey(ev.Platform, ev.Chat.ID, ev.From.ID)
}

// convKey returns the key under which a handling waits for events from
// user in chat (user "" for anyone in the chat) of platform p.
func convKey(p, chat, user string) string { return p + "\x00" + chat + "\x00" + user }

// Waits are the handlings that wait, by where they wait, and the heap of
// their deadlines served by one timer. Its methods are safe for
// concurrent use.
type Waits struct {
	// push queues task on the engine's inbound executor under key (a
	// chat's): the runs of a handling are its chat's tasks. run runs h
	// again, the wait it had ended with resume.
	push func(key string, task func()) error
	run  func(h *Handling, resume error)

	mu      sync.Mutex
	waiting map[string]*Wait // by convKey: the oldest, linked to the others by next
	n       int
	expiry  expiryHeap
	timer   *time.Timer
	timerAt time.Time
	seq     uint64
	closed  bool
}

// NewWaits returns the waits of an engine whose push queues a task on
// its inbound executor and whose run runs a handling again (see Waits).
func NewWaits(push func(key string, task func()) error, run func(h *Handling, resume error)) *Waits {
	return &Waits{push: push, run: run}
}

// Park records that w's handling waits: by where it waits, and by its
// deadline. A wait whose question failed meanwhile is resumed at once.
func (ws *Waits) Park(w *Wait) {
	w.h.mu.Lock()
	w.h.compactLocked()
	w.h.mu.Unlock()
	if ws.parkLocked(w) {
		ws.askResume(w) // its question failed as it parked
	}
}

// parkLocked is Park's part under the lock; it reports whether the wait
// ended meanwhile and must be resumed.
func (ws *Waits) parkLocked(w *Wait) (resume bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.closed || w.parked {
		return false // the engine stops: a journal keeps the handling's events
	}
	if ws.waiting == nil {
		ws.waiting = make(map[string]*Wait)
	}
	key := w.conv()
	w.next = nil
	if first := ws.waiting[key]; first == nil {
		ws.waiting[key] = w
	} else {
		last := first
		for last.next != nil {
			last = last.next
		}
		last.next = w
	}
	w.parked = true
	w.h.tellParked(true)
	ws.n++
	ws.seq++
	w.seq = ws.seq
	ws.expiry.push(w)
	if first := ws.expiry[0]; ws.timerAt.IsZero() || first.deadline.Before(ws.timerAt) {
		ws.armLocked(first.deadline)
	}
	return w.ended != nil
}

// armLocked sets the expiry timer to at.
func (ws *Waits) armLocked(at time.Time) {
	d := max(time.Until(at), 0)
	if ws.timer == nil {
		ws.timer = time.AfterFunc(d, ws.expire) // a timeout: the waits' deadlines
	} else {
		ws.timer.Reset(d)
	}
	ws.timerAt = at
}

// Unpark removes w from the waiting handlings and reports whether it was
// there: the caller, which found w with For, then runs its handling.
func (ws *Waits) Unpark(w *Wait) bool {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.unparkLocked(w)
}

func (ws *Waits) unparkLocked(w *Wait) bool {
	if !w.parked {
		return false
	}
	w.parked = false
	w.h.tellParked(false)
	key := w.conv()
	if first := ws.waiting[key]; first == w {
		if w.next == nil {
			delete(ws.waiting, key)
		} else {
			ws.waiting[key] = w.next
		}
	} else {
		for x := first; x != nil; x = x.next {
			if x.next == w {
				x.next = w.next
				break
			}
		}
	}
	w.next = nil
	ws.n--
	if w.index >= 0 {
		ws.expiry.remove(w.index)
	}
	return true
}

// For returns the waits that may take ev, oldest first: its user's in its
// chat, then those of the chat's that take anyone's.
func (ws *Waits) For(ev *platform.Event) []*Wait {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.n == 0 || ev.Chat.ID == "" {
		return nil
	}
	var out []*Wait
	for _, key := range []string{convKey(ev.Platform, ev.Chat.ID, ev.From.ID), convKey(ev.Platform, ev.Chat.ID, "")} {
		for w := ws.waiting[key]; w != nil; w = w.next {
			if w.messages && ev.Kind != platform.EventMessage {
				continue
			}
			out = append(out, w)
		}
		if ev.From.ID == "" {
			break // the two keys are one
		}
	}
	return out
}

// expire runs when the expiry timer fires: it asks the handlings whose
// waits ended to resume.
func (ws *Waits) expire() {
	var due []*Wait
	ws.mu.Lock()
	now := time.Now()
	for len(ws.expiry) > 0 && !ws.expiry[0].deadline.After(now) {
		w := ws.expiry.pop()
		w.ended = context.DeadlineExceeded
		due = append(due, w)
	}
	ws.timerAt = time.Time{}
	if len(ws.expiry) > 0 {
		ws.armLocked(ws.expiry[0].deadline)
	}
	ws.mu.Unlock()
	for _, w := range due {
		ws.askResume(w)
	}
}

// askResume queues a task that runs w's handling again with the reason its
// wait ended (w.ended), on its chat's key, unless one is queued.
func (ws *Waits) askResume(w *Wait) {
	ws.mu.Lock()
	if w.resuming || ws.closed {
		ws.mu.Unlock()
		return
	}
	w.resuming = true
	ws.mu.Unlock()
	err := ws.push(w.h.Key(), func() {
		ws.mu.Lock()
		w.resuming = false
		reason := w.ended
		still := ws.unparkLocked(w)
		ws.mu.Unlock()
		if still && reason != nil {
			ws.run(w.h, reason)
		}
	})
	if err != nil {
		ws.mu.Lock()
		w.resuming = false
		ws.mu.Unlock()
	}
}

// Close stops parking waits: the engine stops, and a journal keeps the
// events of those that wait.
func (ws *Waits) Close() {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.closed = true
	if ws.timer != nil {
		ws.timer.Stop()
	}
}

// questionFailed resumes h, if it waits for the answer to its Prompt's
// question at place q, now that the question's send failed with err: the
// user cannot answer what they never got.
func (ws *Waits) questionFailed(h *Handling, q int, err error) {
	h.mu.Lock()
	w := h.wait
	if w == nil || w.question != q {
		h.extraLocked().question = &failedQuestion{at: q, err: err}
		h.mu.Unlock()
		return // not waiting (yet): the wait sees it
	}
	h.mu.Unlock()
	ws.mu.Lock()
	w.ended = fmt.Errorf("%w: %w", ErrPromptNotSent, err)
	parked := w.parked
	ws.mu.Unlock()
	if parked {
		ws.askResume(w)
	}
	// Else the run that waits now parks it after this and sees the
	// failure at its next run — or, still running, sees it in the log.
}

// expiryHeap is a min-heap of waits by deadline.
type expiryHeap []*Wait

func (h *expiryHeap) push(w *Wait) {
	*h = append(*h, w)
	w.index = len(*h) - 1
	h.up(w.index)
}

func (h *expiryHeap) pop() *Wait {
	w := (*h)[0]
	h.remove(0)
	return w
}

func (h *expiryHeap) remove(i int) {
	a := *h
	n := len(a) - 1
	a[i].index = -1
	if i != n {
		a[i] = a[n]
		a[i].index = i
	}
	a[n] = nil
	*h = a[:n]
	if i < n {
		h.down(i)
		h.up(i)
	}
}

func (h expiryHeap) less(i, j int) bool {
	return h[i].deadline.Before(h[j].deadline) || h[i].deadline.Equal(h[j].deadline) && h[i].seq < h[j].seq
}

func (h expiryHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h expiryHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h expiryHeap) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			return
		}
		h.swap(i, m)
		i = m
	}
}
