package telegram

import (
	"time"

	"github.com/heraldbot/herald/internal/httpserve"
)

// Accessors the package's own tests use to look inside.

// webhookServer returns the server Run serves the webhook with, or nil.
func (a *Adapter) webhookServer() *httpserve.Server {
	a.addrMu.Lock()
	defer a.addrMu.Unlock()
	return a.server
}

// due is dueQueries with the same delay for every kind, returning the
// IDs.
func (t *pressTracker) due(now time.Time, after time.Duration) (ids []string, next time.Time) {
	qs, next := t.dueQueries(now, func(queryKind) time.Duration { return after })
	for _, q := range qs {
		ids = append(ids, q.id)
	}
	return ids, next
}
