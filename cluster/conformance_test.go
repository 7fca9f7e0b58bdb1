package cluster_test

import (
	"testing"

	"github.com/heraldbot/herald/cluster"
	"github.com/heraldbot/herald/cluster/embedded"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/core/journal/journaltest"
)

// The journal of one process on JetStream passes the journals' suite; a
// journal reopened on the same server is the process restarted.
func TestJournalSuite(t *testing.T) {
	var last *server
	journaltest.Run(t, func(t *testing.T) journal.Journal {
		last = startServer(t, t.TempDir(), embedded.Config{})
		return open(t, last.nc, cluster.Config{})
	}, journaltest.Features{Durable: true, Reopen: func(t *testing.T) journal.Journal {
		return open(t, last.nc, cluster.Config{})
	}})
}

// The journal shared by several processes passes it too, as one member:
// what it records, its consumers hand over once it joined.
func TestSharedSuite(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journal.Journal {
		srv := startServer(t, t.TempDir(), embedded.Config{})
		s, err := cluster.OpenShared(ctxFor(t), srv.nc, cluster.SharedConfig{Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, journaltest.Features{Durable: true, Deferred: true})
}
