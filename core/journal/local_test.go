package journal_test

import (
	"testing"

	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/journal/journaltest"
)

// The engine's default journal, which keeps nothing, passes the suite.
func TestLocalInMemory(t *testing.T) {
	journaltest.Run(t, func(*testing.T) journal.Journal { return journal.NewLocal(nil) }, journaltest.Features{})
}
