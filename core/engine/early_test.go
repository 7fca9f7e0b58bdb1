package engine_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/heraldbot/herald/adapters/memory"
	"github.com/heraldbot/herald/core/engine"
	"github.com/heraldbot/herald/core/journal"
	"github.com/heraldbot/herald/platform"
)

// gatedLog is a memJournal whose Pending waits for gate: Run is reading
// the journal until it is closed.
type gatedLog struct {
	*memJournal
	gate chan struct{}
}

func (g *gatedLog) Pending(ctx context.Context) (journal.Pending, error) {
	<-g.gate
	return g.memJournal.Pending(ctx)
}

// A send made before Run, held for it, when Shutdown comes while Run
// reads the journal, is refused before its record is written: the
// journal does not keep its id, and the named send made again later is
// made, not taken for a duplicate.
func TestSendHeldRefusedByShutdownDuringRecover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mem, j := memory.New(), newMemJournal()
		log := &gatedLog{j, make(chan struct{})}
		e, err := engine.New(engine.WithAdapter(mem), engine.WithJournal(journal.NewLocal(log)))
		if err != nil {
			t.Fatal(err)
		}
		f := e.Send(mem.Name(), dm, platform.TextMessage("x"), engine.SendID("n1"))
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		synctest.Wait() // Run reads the journal
		must(t, e.Shutdown(context.Background()))
		close(log.gate)
		<-done
		if _, err := f.Wait(context.Background()); !errors.Is(err, engine.ErrDispatcherClosed) {
			t.Fatalf("the held send = %v; want ErrDispatcherClosed", err)
		}
		if j.ids["send:out/n1"] {
			t.Fatal("the journal keeps the id of a send never made")
		}
	})
}
