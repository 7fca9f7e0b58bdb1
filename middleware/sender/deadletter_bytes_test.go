package sender_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/heraldbot/herald/middleware/sender"
	"github.com/heraldbot/herald/platform"
)

// fileLetter returns a dead letter, numbered by its Attempts, of a send
// of a document of size bytes as Data.
func fileLetter(n, size int) sender.DeadLetter {
	return sender.DeadLetter{Request: platform.SendRequest{Platform: "webchat", Target: platform.Chat{ID: "c"},
		Message: platform.OutboundMessage{Attachments: []platform.Attachment{
			{Kind: platform.AttachDocument, Data: make([]byte, size), FileName: "f.bin"}}}}, Attempts: n}
}

// TestDeadLetterStoreByteBound: letters carrying files count their bytes,
// and the oldest are dropped, as by count, while the store holds more
// than its byte bound; a letter larger than the bound on its own is
// dropped and the others kept.
func TestDeadLetterStoreByteBound(t *testing.T) {
	const kib = 1 << 10
	one := fileLetter(0, 100*kib).Size()
	tests := []struct {
		name     string
		capacity int
		maxBytes int64
		sizes    []int // file bytes of the letters added, numbered 1, 2, …
		want     []int // the letters kept
		dropped  uint64
	}{
		{"within both", 10, 4 * one, []int{100 * kib, 100 * kib, 100 * kib}, []int{1, 2, 3}, 0},
		{"bytes first", 10, 3 * one, []int{100 * kib, 100 * kib, 100 * kib, 100 * kib, 100 * kib}, []int{3, 4, 5}, 2},
		{"count first", 2, 10 * one, []int{100 * kib, 100 * kib, 100 * kib}, []int{2, 3}, 1},
		{"one big letter drops several", 10, 3 * one, []int{100 * kib, 100 * kib, 100 * kib, 200 * kib}, []int{3, 4}, 2},
		{"too big alone", 10, 3 * one, []int{100 * kib, 400 * kib, 100 * kib}, []int{1, 3}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sender.NewDeadLetterStoreLimits(tt.capacity, tt.maxBytes)
			for i, size := range tt.sizes {
				s.Add(fileLetter(i+1, size))
				if s.Bytes() > s.MaxBytes() {
					t.Fatalf("after letter %d: %d bytes kept; bound %d", i+1, s.Bytes(), s.MaxBytes())
				}
			}
			if got := attemptsList(s.List()); !slices.Equal(got, tt.want) {
				t.Errorf("kept %v; want %v", got, tt.want)
			}
			var sum int64
			for _, dl := range s.List() {
				sum += dl.Size()
			}
			if s.Bytes() != sum || s.Dropped() != tt.dropped {
				t.Errorf("Bytes %d (letters sum to %d), Dropped %d; want %d", s.Bytes(), sum, s.Dropped(), tt.dropped)
			}
		})
	}
}

// TestDeadLetterSizeByReference: a letter of a file sent by FileID or URL
// counts the reference, not the file; one sent as Data counts the data.
func TestDeadLetterSizeByReference(t *testing.T) {
	byRef := sender.DeadLetter{Request: platform.SendRequest{Target: platform.Chat{ID: "c"}, Message: platform.OutboundMessage{
		Attachments: []platform.Attachment{{Kind: platform.AttachPhoto, FileID: "upload-17", Size: 4 << 20}, {Kind: platform.AttachDocument, URL: "https://example.com/a.pdf"}}}}}
	if n := byRef.Size(); n > 512 {
		t.Errorf("a letter of two files by reference counts %d bytes; want well under 512 (no file bytes)", n)
	}
	data := fileLetter(1, 4<<20)
	if n := data.Size(); n < 4<<20 || n > 4<<20+512 {
		t.Errorf("a letter of a 4 MiB file as Data counts %d bytes; want 4 MiB and a little", n)
	}
}

// TestDeadLetterStoreDefaultByteBound floods the default store, as the
// engine makes it, with the dead letters of 1 MiB files, as a web chat
// whose tabs closed gets from the fileecho plugin: it keeps no more than
// DefaultDeadLetterBytes, where it kept all 149 MiB of 149 letters.
func TestDeadLetterStoreDefaultByteBound(t *testing.T) {
	for _, s := range []*sender.DeadLetterStore{sender.NewDeadLetterStore(0), new(sender.DeadLetterStore)} {
		if s.MaxBytes() != sender.DefaultDeadLetterBytes {
			t.Fatalf("MaxBytes = %d; want %d", s.MaxBytes(), sender.DefaultDeadLetterBytes)
		}
		failing := sender.DeadLetters(s)(&recorder{reply: always(platform.Permanent(errors.New("no tab")))})
		for i := range 149 {
			rq := fileLetter(i, 1<<20).Request
			if _, err := failing.Send(context.Background(), rq); err == nil {
				t.Fatal("the failing sender succeeded")
			}
		}
		if s.Bytes() > sender.DefaultDeadLetterBytes || s.Len() >= 149 || s.Len() < 60 {
			t.Fatalf("%d letters of %d bytes kept; want at most %d bytes", s.Len(), s.Bytes(), sender.DefaultDeadLetterBytes)
		}
		if s.Dropped() != uint64(149-s.Len()) || s.List()[s.Len()-1].Attempts != 1 {
			t.Fatalf("Dropped %d with %d kept; want the oldest dropped", s.Dropped(), s.Len())
		}
	}
}

// TestDeadLetterStoreSizeIsFixedWhenAdded: a caller that reuses a
// request's slices after the send cannot throw the store's count off.
func TestDeadLetterStoreSizeIsFixedWhenAdded(t *testing.T) {
	s := sender.NewDeadLetterStoreLimits(10, 1<<20)
	dl := fileLetter(1, 1000)
	s.Add(dl)
	before := s.Bytes()
	dl.Request.Message.Attachments[0].Data = make([]byte, 500_000) // shared slice of attachments
	if s.Bytes() != before {
		t.Fatalf("Bytes changed from %d to %d", before, s.Bytes())
	}
	if n := s.Remove(s.List()[0].ID); n != 1 || s.Bytes() != 0 || s.Len() != 0 {
		t.Fatalf("Remove = %d, leaving %d bytes in %d letters; want all gone", n, s.Bytes(), s.Len())
	}
}

// TestDeadLetterStoreBytesAfterRemoveAndDrain: removing letters frees
// their bytes.
func TestDeadLetterStoreBytesAfterRemoveAndDrain(t *testing.T) {
	s := sender.NewDeadLetterStoreLimits(4, 1<<20)
	for i := range 6 { // wrapped around the ring
		s.Add(fileLetter(i+1, 1000*(i+1)))
	}
	l := s.List()
	if got := attemptsList(l); !slices.Equal(got, []int{3, 4, 5, 6}) {
		t.Fatalf("kept %v", got)
	}
	s.Remove(l[1].ID, l[2].ID)
	if want := l[0].Size() + l[3].Size(); s.Bytes() != want {
		t.Fatalf("Bytes after Remove = %d; want %d", s.Bytes(), want)
	}
	s.Add(fileLetter(7, 10))
	if got := attemptsList(s.Drain()); !slices.Equal(got, []int{3, 6, 7}) || s.Bytes() != 0 {
		t.Fatalf("Drain = %v, leaving %d bytes", got, s.Bytes())
	}
}

// TestDeadLetterStoreLogsDrops: the drops are logged, rate-limited: the
// first at once, with what was dropped, and not a line per drop.
func TestDeadLetterStoreLogsDrops(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	s := sender.NewDeadLetterStoreLimits(100, 3*fileLetter(0, 1000).Size())
	s.SetLogger(zap.New(core))
	for i := range 50 {
		s.Add(fileLetter(i+1, 1000))
	}
	entries := logs.All()
	if len(entries) != 1 {
		t.Fatalf("%d log lines for 47 drops; want 1 (rate-limited)", len(entries))
	}
	f := entries[0].ContextMap()
	if f["dropped"] != int64(1) || f["chat"] != "c" || f["platform"] != "webchat" || f["max_bytes"] != s.MaxBytes() {
		t.Errorf("log line %q %v; want the drop's letter and the bound", entries[0].Message, f)
	}
	s.SetLogger(nil)
	s.Add(fileLetter(51, 1000)) // no logger: nothing, and no panic
}

// TestDeadLetterStoreForgetsDroppedInBackend: letters dropped for bytes
// are forgotten in the backend, as those dropped for count are.
func TestDeadLetterStoreForgetsDroppedInBackend(t *testing.T) {
	b := &memBackend{}
	s := sender.NewDeadLetterStoreLimits(10, 2*fileLetter(0, 1000).Size())
	s.SetBackend(b, func(err error) { t.Errorf("backend: %v", err) })
	for i := range 5 {
		s.Add(fileLetter(i+1, 1000))
	}
	kept := s.List()
	if got := b.ids(); !slices.Equal(got, []string{kept[0].ID, kept[1].ID}) {
		t.Fatalf("backend keeps %v; want the two letters the store kept, %s and %s", got, kept[0].ID, kept[1].ID)
	}
	// Restored letters are bounded too, and the excess is forgotten.
	r := sender.NewDeadLetterStoreLimits(10, 2*fileLetter(0, 1000).Size())
	rb := &memBackend{}
	r.SetBackend(rb, nil)
	var restored []sender.DeadLetter
	for i := range 4 {
		dl := fileLetter(i+1, 1000)
		dl.ID, _ = rb.Keep(dl)
		restored = append(restored, dl)
	}
	r.Restore(restored)
	if got := attemptsList(r.List()); !slices.Equal(got, []int{3, 4}) || len(rb.ids()) != 2 {
		t.Fatalf("restored %v, backend keeps %v", got, rb.ids())
	}
}

// TestDeadLetterStoreConcurrentBytes adds letters of files from many
// goroutines while others remove and drain: the store never holds more
// than its bound, and its count of bytes is its letters' sizes.
func TestDeadLetterStoreConcurrentBytes(t *testing.T) {
	bound := 20 * fileLetter(0, 10_000).Size()
	s := sender.NewDeadLetterStoreLimits(1000, bound)
	var wg sync.WaitGroup
	for p := range 8 {
		wg.Go(func() {
			for i := range 300 {
				s.Add(fileLetter(i, 1000*(1+(i+p)%20)))
				if b := s.Bytes(); b > bound {
					t.Errorf("%d bytes kept; bound %d", b, bound)
					return
				}
				switch i % 50 {
				case 0:
					s.Drain()
				case 25:
					if l := s.List(); len(l) > 0 {
						s.Remove(l[0].ID)
					}
				}
			}
		})
	}
	wg.Wait()
	var sum int64
	for _, dl := range s.List() {
		sum += dl.Size()
	}
	if sum != s.Bytes() {
		t.Fatalf("letters sum to %d bytes; the store counts %d", sum, s.Bytes())
	}
}

// memBackend is a DeadLetterBackend in memory.
type memBackend struct {
	mu   sync.Mutex
	seq  int
	kept []string
}

func (b *memBackend) Keep(sender.DeadLetter) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	id := fmt.Sprintf("b%d", b.seq)
	b.kept = append(b.kept, id)
	return id, nil
}

func (b *memBackend) Forget(ids ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.kept = slices.DeleteFunc(b.kept, func(id string) bool { return slices.Contains(ids, id) })
	return nil
}

func (b *memBackend) ids() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.kept)
}
