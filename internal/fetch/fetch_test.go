package fetch

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/heraldbot/herald/platform"
)

var errTooLarge = errors.New("too large")

func tooLarge(size int64, by string) error { return platform.Permanent(errTooLarge) }

func TestGet(t *testing.T) {
	body := bytes.Repeat([]byte("herald "), 100) // 700 bytes
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/file":
			w.Write(body)
		case "/chunked": // no Content-Length
			w.(http.Flusher).Flush()
			w.Write(body)
		case "/flood":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		case "/busy":
			w.WriteHeader(http.StatusTooManyRequests)
		case "/gone":
			http.NotFound(w, r)
		case "/broken":
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer srv.Close()
	c := srv.Client()
	tests := []struct {
		path      string
		max       int64
		want      []byte
		permanent bool
		tooLarge  bool
		retry     time.Duration // a retry-after error asking for this wait
	}{
		{path: "/file", max: 700, want: body},
		{path: "/file", max: 1 << 20, want: body},
		{path: "/chunked", max: 700, want: body},
		{path: "/file", max: 699, permanent: true, tooLarge: true},
		{path: "/chunked", max: 699, permanent: true, tooLarge: true},
		{path: "/flood", max: 10, retry: 7 * time.Second},
		{path: "/busy", max: 10},
		{path: "/gone", max: 10, permanent: true},
		{path: "/broken", max: 10},
	}
	for _, tt := range tests {
		got, err := Get(context.Background(), c, srv.URL+tt.path, tt.max, tooLarge)
		if tt.want != nil {
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("Get(%s, %d) = %d bytes, %v; want the %d bytes", tt.path, tt.max, len(got), err, len(tt.want))
			}
			continue
		}
		d, isRetry := platform.RetryAfterOf(err)
		switch {
		case err == nil:
			t.Errorf("Get(%s, %d) = %d bytes; want an error", tt.path, tt.max, len(got))
		case platform.IsPermanent(err) != tt.permanent, errors.Is(err, errTooLarge) != tt.tooLarge:
			t.Errorf("Get(%s, %d) = %v: permanent %v, too large %v; want %v, %v", tt.path, tt.max, err, platform.IsPermanent(err), errors.Is(err, errTooLarge), tt.permanent, tt.tooLarge)
		case isRetry != (tt.retry > 0) || d != tt.retry:
			t.Errorf("Get(%s, %d) = %v; want a retry-after of %v", tt.path, tt.max, err, tt.retry)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Get(ctx, c, srv.URL+"/file", 700, tooLarge); !errors.Is(err, context.Canceled) || platform.IsPermanent(err) {
		t.Errorf("Get with a cancelled context = %v; want a retryable error wrapping context.Canceled", err)
	}
	if _, err := Get(context.Background(), c, "http://[::1", 700, tooLarge); !platform.IsPermanent(err) {
		t.Errorf("Get of a bad URL = %v; want a permanent error", err)
	}
}
