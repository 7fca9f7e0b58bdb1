package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A wave's answers are read as the library's PublishMsgAsync reads each:
// the same ack, the same error and kind of error, each in its place;
// a record nobody answers (no stream) gets ErrNoStreamResponse, and one
// not sent or not answered before the wave ended is told apart.
func TestAcksReadAsTheLibrary(t *testing.T) {
	parallel(t, time.Second)
	p := newAckPeer(t)
	a := &acks{nc: p.nc}
	answers := []string{
		`{"stream":"S","seq":1}`,
		`{"stream":"S","seq":42,"duplicate": true}`,
		`{"stream":"S","domain":"hub","seq":7}`,
		`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"S","seq":0}`,
		`not json`,
	}
	for _, answer := range answers {
		p.mu.Lock()
		p.answer = []byte(answer)
		p.mu.Unlock()
		paf, err := p.js.PublishMsgAsync(&nats.Msg{Subject: ackSubject, Data: []byte("r")})
		if err != nil {
			t.Fatal(err)
		}
		var want *jetstream.PubAck
		var wantErr error
		select {
		case want = <-paf.Ok():
		case wantErr = <-paf.Err():
		case <-time.After(10 * time.Second):
			t.Fatal("the library's publish got no answer")
		}
		w, err := a.begin(1)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.nc.PublishMsg(&nats.Msg{Subject: ackSubject, Reply: w.reply(0), Data: []byte("r")}); err != nil {
			t.Fatal(err)
		}
		<-w.done
		got := a.end(w)[0]
		var apiErr *jetstream.APIError
		if !got.got || !reflect.DeepEqual(got.ack, want) || fmt.Sprint(errors.Unwrap(got.err)) != fmt.Sprint(wantErr) && fmt.Sprint(got.err) != fmt.Sprint(wantErr) ||
			errors.As(got.err, &apiErr) != errors.As(wantErr, &apiErr) {
			t.Errorf("answer %q: acks read %+v, %v; the library %+v, %v", answer, got.ack, got.err, want, wantErr)
		}
	}

	// Three records of one wave: one answered, one to no stream, one never
	// sent; then one whose answer comes after the wave ended.
	w, err := a.begin(3)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.answer = []byte(`{"stream":"S","seq":9}`)
	p.mu.Unlock()
	for i, subj := range []string{ackSubject, "nobody.listens"} {
		if err := p.nc.PublishMsg(&nats.Msg{Subject: subj, Reply: w.reply(i), Data: []byte("r")}); err != nil {
			t.Fatal(err)
		}
	}
	a.skip(w, 2)
	<-w.done
	res := a.end(w)
	if !res[0].got || res[0].err != nil || res[0].ack.Sequence != 9 {
		t.Errorf("the answered record: %+v", res[0])
	}
	if !res[1].got || !errors.Is(res[1].err, jetstream.ErrNoStreamResponse) || !refused(res[1].err) {
		t.Errorf("the record no stream took: %+v; want ErrNoStreamResponse", res[1])
	}
	if !res[2].got || res[2].err == nil {
		t.Errorf("the record not sent: %+v; want an error", res[2])
	}
	late, err := a.begin(1)
	if err != nil {
		t.Fatal(err)
	}
	ended := a.end(late)
	if err := p.nc.PublishMsg(&nats.Msg{Subject: ackSubject, Reply: late.reply(0), Data: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	after, err := a.begin(1) // answered after the late one: one goroutine reads them in order
	if err != nil {
		t.Fatal(err)
	}
	if err := p.nc.PublishMsg(&nats.Msg{Subject: ackSubject, Reply: after.reply(0), Data: []byte("r")}); err != nil {
		t.Fatal(err)
	}
	<-after.done
	a.end(after)
	if ended[0].got {
		t.Errorf("a wave ended before its answer came: %+v; want it unanswered", ended[0])
	}
}

// A record nobody waits for (a handled mark) has its refusal heard, as
// the library's PublishAsync would have dropped it: the server's error
// answer, and no stream at all; an ack is not an error.
func TestAcksUnwaitedRefusalHeard(t *testing.T) {
	parallel(t, time.Second)
	p := newAckPeer(t)
	heard := make(chan error, 3)
	a := &acks{nc: p.nc, unwaited: func(err error) { heard <- err }}
	p.mu.Lock()
	p.answer = []byte(`{"stream":"S","seq":3}`)
	p.mu.Unlock()
	if err := a.publish(&nats.Msg{Subject: ackSubject}); err != nil {
		t.Fatal(err)
	}
	// The peer answers in order: once this waited one is answered, so was
	// the one before, with the ack.
	if _, err := publishRecord(context.Background(), p.nc, &nats.Msg{Subject: ackSubject}, ""); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.answer = []byte(`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"S","seq":0}`)
	p.mu.Unlock()
	if err := a.publish(&nats.Msg{Subject: ackSubject}); err != nil {
		t.Fatal(err)
	}
	if err := a.publish(&nats.Msg{Subject: "nobody.listens"}); err != nil {
		t.Fatal(err)
	}
	var refused, noStream int // the two answers come in either order
	for range 2 {
		select {
		case err := <-heard:
			var apiErr *jetstream.APIError
			switch {
			case errors.As(err, &apiErr) && apiErr.ErrorCode == 10077:
				refused++
			case errors.Is(err, jetstream.ErrNoStreamResponse):
				noStream++
			default:
				t.Errorf("heard %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a refusal was not heard")
		}
	}
	if refused != 1 || noStream != 1 {
		t.Errorf("heard %d refusals and %d answers of no stream; want one each", refused, noStream)
	}
	// Both heard: the ack, answered before them, was heard (or not) too.
	select {
	case err := <-heard:
		t.Errorf("heard %v after the two refusals", err)
	default:
	}
}
