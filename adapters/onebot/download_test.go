package onebot

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/heraldbot/herald/platform"
)

// TestDownloadRefusals checks what Download refuses, and that its errors
// never show a link's query, where QQ puts the link's key.
func TestDownloadRefusals(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		switch r.URL.Path {
		case "/expired":
			http.Error(w, "gone", http.StatusForbidden)
		case "/busy":
			http.Error(w, "busy", http.StatusServiceUnavailable)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		default:
			w.Write([]byte("0123456789"))
		}
	}))
	defer srv.Close()
	a, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	link := func(path string) string { return srv.URL + path + "?rkey=key-of-the-link" }
	tests := []struct {
		name      string
		att       platform.Attachment
		max       int64
		permanent bool
		is        error // nil: just an error
		request   bool  // the refusal needs a request
	}{
		{"no file", platform.Attachment{Kind: platform.AttachPhoto}, 0, true, platform.ErrInvalidMessage, false},
		{"file ID only", platform.Attachment{Kind: platform.AttachDocument, FileID: "/f-1"}, 0, true, platform.ErrInvalidMessage, false},
		{"local path", platform.Attachment{Kind: platform.AttachPhoto, URL: "file:///tmp/a.png"}, 0, true, platform.ErrInvalidMessage, false},
		{"size known too large", platform.Attachment{Kind: platform.AttachPhoto, URL: link("/a"), Size: 11}, 10, true, platform.ErrFileTooLarge, false},
		{"too large", platform.Attachment{Kind: platform.AttachPhoto, URL: link("/a")}, 9, true, platform.ErrFileTooLarge, true},
		{"expired link", platform.Attachment{Kind: platform.AttachPhoto, URL: link("/expired")}, 0, true, nil, true},
		{"server busy", platform.Attachment{Kind: platform.AttachPhoto, URL: link("/busy")}, 0, false, nil, true},
		{"redirected to a local file", platform.Attachment{Kind: platform.AttachPhoto, URL: link("/to-file")}, 0, false, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := requests.Load()
			data, err := a.Download(ctx, tt.att, tt.max)
			switch {
			case err == nil:
				t.Fatalf("Download = %q; want an error", data)
			case platform.IsPermanent(err) != tt.permanent:
				t.Errorf("Download = %v: permanent %v; want %v", err, platform.IsPermanent(err), tt.permanent)
			case tt.is != nil && !errors.Is(err, tt.is):
				t.Errorf("Download = %v; want an error wrapping %v", err, tt.is)
			case strings.Contains(err.Error(), "key-of-the-link"):
				t.Errorf("Download = %v: the error shows the link's key", err)
			}
			if made := requests.Load() > before; made != tt.request {
				t.Errorf("a request made: %v; want %v", made, tt.request)
			}
		})
	}
	if data, err := a.Download(ctx, platform.Attachment{Kind: platform.AttachPhoto, URL: link("/a")}, 10); err != nil || string(data) != "0123456789" {
		t.Errorf("Download within the limit = %q, %v", data, err)
	}
}
