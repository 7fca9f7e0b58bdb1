package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/heraldbot/herald/cluster/embedded"
)

// pullFixture is a stream of n messages, a consumer of it whose AckWait
// (a minute) is far longer than the test waits for a message, and a
// puller of the consumer.
func pullFixture(ctx context.Context, t *testing.T, nc *nats.Conn, n int) (jetstream.Consumer, *puller) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "P", Subjects: []string{"p.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := js.Publish(ctx, fmt.Sprintf("p.%d", i), []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "c", AckPolicy: jetstream.AckExplicitPolicy, AckWait: time.Minute, MaxDeliver: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	return cons, newPuller(it)
}

// waitDelivered waits until the server handed all n messages to a pull.
func waitDelivered(ctx context.Context, t *testing.T, cons jetstream.Consumer, n int) {
	t.Helper()
	for {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumAckPending+int(info.AckFloor.Consumer) >= n {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the server handed %d of %d messages to the pull", info.NumAckPending, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// A stopped puller hands back at once what its pulls brought and nobody
// read: the next reader of the consumer gets those messages now, not
// after AckWait (nats.go's Stop drops them).
func TestPullerHandsBackWhatItHolds(t *testing.T) {
	parallel(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 20
	cons, p := pullFixture(ctx, t, connectEmbedded(t), n)
	first, err := p.Next()
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Ack(); err != nil {
		t.Fatal(err)
	}
	waitDelivered(ctx, t, cons, n) // the rest are in the puller's buffer
	p.Stop()
	if _, err := p.Next(); !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
		t.Fatalf("Next after Stop: %v; want ErrMsgIteratorClosed", err)
	}

	it2, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it2.Stop()
	for i := 1; i < n; i++ {
		msg, err := it2.Next(jetstream.NextMaxWait(10 * time.Second)) // AckWait is a minute
		if err != nil {
			t.Fatalf("message %d of the %d handed back: %v", i, n-1, err)
		}
		if err := msg.Ack(); err != nil {
			t.Fatal(err)
		}
	}
}

// With the server gone, a stopped puller ends within its bound: what it
// held the server offers again after AckWait, and a partition's release
// or a shutdown does not wait on the connection's DrainTimeout.
func TestPullerStopsInAnOutage(t *testing.T) {
	parallel(t, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := embedded.Start(embedded.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const n = 20
	cons, p := pullFixture(ctx, t, nc, n)
	if _, err := p.Next(); err != nil {
		t.Fatal(err)
	}
	waitDelivered(ctx, t, cons, n)
	srv.Shutdown()
	p.Stop()
	ended := make(chan error, 1)
	go func() {
		for {
			if _, err := p.Next(); err != nil && !errors.Is(err, jetstream.ErrNoHeartbeat) {
				ended <- err
				return
			}
		}
	}()
	select {
	case err := <-ended:
		if !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			t.Fatalf("Next after Stop in an outage: %v; want ErrMsgIteratorClosed", err)
		}
	case <-time.After(handBackWithin + 10*time.Second): // a liveness bound, far below DrainTimeout's 30 s
		t.Fatal("a stopped puller still reads with the server gone")
	}
}
