package telegram

import (
	"errors"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"go.uber.org/zap"

	"github.com/heraldbot/herald/platform"
)

// errRunEnded is what [runState.deliver] returns once its Run is ending.
var errRunEnded = errors.New("telegram: Run is ending")

// seenWindow is how many update IDs a [ledger] remembers.
const seenWindow = 1024

// runState is one Run's delivery of updates to handle.
type runState struct {
	handle   func(platform.Event) error
	username string
	answers  chan<- string
	log      *zap.Logger
	taken    *ledger

	mu     sync.Mutex // serialises deliveries; guards closed
	closed bool
}

// deliver hands u's events to handle in order, unless Run has ended. It
// returns nil when u was taken: handle took every event of it, now or
// before (a duplicate is dropped). Otherwise it returns the error with
// which handle refused an event, or errRunEnded, and u is not recorded as
// taken; the events of it handle took before the refusal are recorded,
// and skipped when u is delivered again. A callback query is queued for
// answering once taken.
func (rs *runState) deliver(u *tgbotapi.Update) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return errRunEnded
	}
	done, whole := rs.taken.progress(u.UpdateID)
	if whole {
		rs.log.Debug("telegram: dropping a duplicate update", zap.Int("update_id", u.UpdateID))
		return nil
	}
	evs := updateToEvents(u, rs.username, time.Now().UTC())
	for i := done; i < len(evs); i++ {
		if err := rs.handle(evs[i]); err != nil {
			if i > done {
				rs.taken.record(u.UpdateID, i)
			}
			return err
		}
	}
	rs.taken.record(u.UpdateID, takenWhole)
	if cq := u.CallbackQuery; cq != nil && cq.ID != "" {
		select {
		case rs.answers <- cq.ID:
		default:
			rs.log.Warn("telegram: too many callback queries waiting; not answering one", zap.Int("update_id", u.UpdateID))
		}
	}
	return nil
}

// close ends deliveries: once it returns, handle is not called again.
func (rs *runState) close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
}

// takenWhole is the progress of an update all of whose events were taken.
const takenWhole = -1

// ledger remembers, for the last seenWindow updates handed on, how many of
// their events were taken (takenWhole for all), so that an update
// delivered again is dropped, or resumed after the events taken already.
// It outlives a Run, so a redelivery after a restart is caught too. It is
// safe for concurrent use.
type ledger struct {
	mu     sync.Mutex
	taken  map[int]int     // update ID → events taken, or takenWhole
	ring   [seenWindow]int // the same IDs; ring[next] is the oldest once full
	next   int
	filled bool
}

func newLedger() *ledger { return &ledger{taken: make(map[int]int)} }

// progress returns how many events of update id were taken, and whether
// all were.
func (l *ledger) progress(id int) (events int, whole bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, ok := l.taken[id]
	if !ok {
		return 0, false
	}
	if n == takenWhole {
		return 0, true
	}
	return n, false
}

// record notes that n events of update id (takenWhole: all) were taken,
// forgetting the oldest update when the window is full.
func (l *ledger) record(id, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.taken[id]; !ok {
		if l.filled {
			delete(l.taken, l.ring[l.next])
		}
		l.ring[l.next] = id
		l.next = (l.next + 1) % seenWindow
		l.filled = l.filled || l.next == 0
	}
	l.taken[id] = n
}
