package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// libraryPubAck reads data as the jetstream library's PublishMsg does.
func libraryPubAck(data []byte) (*jetstream.PubAck, error) {
	var r struct {
		Type  string              `json:"type"`
		Error *jetstream.APIError `json:"error,omitempty"`
		*jetstream.PubAck
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, jetstream.ErrInvalidJSAck
	}
	if r.Error != nil {
		return nil, fmt.Errorf("nats: %w", r.Error)
	}
	if r.PubAck == nil || r.PubAck.Stream == "" {
		return nil, jetstream.ErrInvalidJSAck
	}
	return r.PubAck, nil
}

// readPubAck reads every answer as the library does, and the acks the
// server writes for a record without a JSON decode.
func TestReadPubAck(t *testing.T) {
	tests := []struct {
		data  string
		plain bool // read by plainPubAck
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
		{``, false},
	}
	for _, tt := range tests {
		t.Run(tt.data, func(t *testing.T) {
			_, plain := plainPubAck([]byte(tt.data))
			if plain != tt.plain {
				t.Errorf("plainPubAck read it: %v; want %v", plain, tt.plain)
			}
			got, err := readPubAck([]byte(tt.data))
			want, wantErr := libraryPubAck([]byte(tt.data))
			if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Errorf("readPubAck = %+v, %v; the library reads %+v, %v", got, err, want, wantErr)
			}
			var apiErr *jetstream.APIError
			if errors.As(err, &apiErr) != errors.As(wantErr, &apiErr) {
				t.Errorf("readPubAck's error %v is an APIError: %v; the library's %v", err, errors.As(err, &apiErr), wantErr)
			}
		})
	}
}

// FuzzReadPubAck holds readPubAck to the library's reading of any answer.
func FuzzReadPubAck(f *testing.F) {
	for _, s := range []string{
		`{"stream":"S","seq":1}`, `{"stream":"S","seq":42,"duplicate": true}`,
		`{"stream":"S","domain":"d","seq":7}`, `{"error":{"code":503,"err_code":10077,"description":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readPubAck(data)
		want, wantErr := libraryPubAck(data)
		if !reflect.DeepEqual(got, want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("readPubAck(%q) = %+v, %v; the library reads %+v, %v", data, got, err, want, wantErr)
		}
	})
}
