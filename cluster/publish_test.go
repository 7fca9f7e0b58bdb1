package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ackPeer answers every publish to ackSubject on an embedded server with
// the answer set last, and keeps the last message it answered: the jetstream
// library's PublishMsg, the oracle, and publishRecord read the same answers.
type ackPeer struct {
	nc *nats.Conn
	js jetstream.JetStream

	mu     sync.Mutex
	answer []byte
	got    *nats.Msg
}

const ackSubject = "acks.test"

func newAckPeer(tb testing.TB) *ackPeer {
	tb.Helper()
	nc := newRestartable(tb).nc
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	p := &ackPeer{nc: nc, js: js}
	if _, err := nc.Subscribe(ackSubject, func(m *nats.Msg) {
		p.mu.Lock()
		answer := p.answer
		p.got = m
		p.mu.Unlock()
		_ = m.Respond(answer)
	}); err != nil {
		tb.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// both publishes to subject through the library and through publishRecord
// with the peer answering answer, and fails tb if they read it apart.
func (p *ackPeer) both(tb testing.TB, subject string, answer []byte) (*jetstream.PubAck, error) {
	tb.Helper()
	p.mu.Lock()
	p.answer = answer
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	want, wantErr := p.js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte("r")})
	got, err := publishRecord(ctx, p.nc, &nats.Msg{Subject: subject, Data: []byte("r")}, "")
	var apiErr *jetstream.APIError
	if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) ||
		errors.As(err, &apiErr) != errors.As(wantErr, &apiErr) {
		tb.Fatalf("answer %q: publishRecord = %+v, %v; the library's PublishMsg %+v, %v", answer, got, err, want, wantErr)
	}
	return got, err
}

// publishRecord reads every answer as the library's PublishMsg does (the
// same ack, the same error and kind of error), and the acks the server
// writes for a record without a JSON decode.
func TestPublishRecordReadsAsTheLibrary(t *testing.T) {
	parallel(t, time.Second)
	p := newAckPeer(t)
	tests := []struct {
		answer string
		plain  bool // read by plainPubAck
	}{
		{`{"stream":"HERALD_IN_bot","seq":1}`, true},
		{`{"stream":"S","seq":18446744073709551615}`, true},
		{`{"stream":"S","seq":0}`, true},
		{`{"stream":"S","seq":42,"duplicate": true}`, true},
		{`{"stream":"S","seq":42,"duplicate":true}`, true},
		{`{"stream":"S","seq":18446744073709551616}`, false},
		{`{"stream":"S","seq":042}`, false},
		{`{"stream":"S","seq":-1}`, false},
		{`{"stream":"S","seq":1,"duplicate": false}`, false},
		{`{"stream":"S","domain":"hub","seq":7}`, false},
		{`{"stream":"S","seq":7,"batch":"b","count":2}`, false},
		{`{"stream":"S\u0041","seq":7}`, false},
		{`{"stream":"","seq":7}`, false},
		{`{"stream":"S","seq":7} `, false},
		{`{"stream":"S","seq":7}}`, false},
		{`{"stream":"S","seq":}`, false},
		{`{"error":{"code":503,"err_code":10077,"description":"maximum messages exceeded"},"stream":"S","seq":0}`, false},
		{`{"error":{"code":400,"err_code":10060,"description":"expected stream does not match"}}`, false},
		{`{"seq":3}`, false},
		{`not json`, false},
	}
	for _, tt := range tests {
		if _, plain := plainPubAck([]byte(tt.answer)); plain != tt.plain {
			t.Errorf("plainPubAck(%q) read it: %v; want %v", tt.answer, plain, tt.plain)
		}
		p.both(t, ackSubject, []byte(tt.answer))
	}

	// The message ID goes as the library's WithMsgID sets it.
	p.mu.Lock()
	p.answer = []byte(`{"stream":"S","seq":5}`)
	p.mu.Unlock()
	if _, err := publishRecord(context.Background(), p.nc, nats.NewMsg(ackSubject), "send:7"); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	id := p.got.Header.Get(jetstream.MsgIDHeader)
	p.mu.Unlock()
	if id != "send:7" {
		t.Errorf("the message ID sent is %q; want send:7", id)
	}

	// No stream: tried again, then the library's error (ErrNoStreamResponse).
	if _, err := p.both(t, "nobody.listens", nil); !errors.Is(err, jetstream.ErrNoStreamResponse) {
		t.Errorf("a publish nobody answers: %v; want ErrNoStreamResponse", err)
	}
}

// FuzzPublishRecord holds publishRecord's reading of any answer to the
// library's PublishMsg.
func FuzzPublishRecord(f *testing.F) {
	for _, s := range []string{
		`{"stream":"S","seq":1}`, `{"stream":"S","seq":42,"duplicate": true}`,
		`{"stream":"S","domain":"d","seq":7}`, `{"error":{"code":503,"err_code":10077,"description":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	p := newAckPeer(f)
	f.Fuzz(func(t *testing.T, answer []byte) {
		p.both(t, ackSubject, answer)
	})
}
