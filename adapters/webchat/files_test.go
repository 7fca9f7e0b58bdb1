package webchat

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/heraldbot/herald/platform"
)

// keptBytes returns the bytes of the files s keeps, counted one by one.
func (s *fileStore) keptBytes() int64 {
	s.mu.Lock()
	defer s.unlock()
	var n int64
	for e := s.kept.Front(); e != nil; e = e.Next() {
		n += e.Value.(*storedFile).size
	}
	return n
}

// checkStore fails t unless s holds at most its bound, and, when idle
// (no reservation, no pin), exactly the bytes of the files it keeps.
func checkStore(t *testing.T, s *fileStore, idle bool) {
	t.Helper()
	used, files, refs := s.stats()
	if used > s.max || files > maxFiles || refs > maxFileRefs {
		t.Fatalf("store holds %d bytes in %d files, %d references; bound %d bytes", used, files, refs, s.max)
	}
	if kept := s.keptBytes(); idle && used != kept {
		t.Fatalf("idle store counts %d bytes; its files hold %d", used, kept)
	}
}

// fill returns n bytes of b.
func fill(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

// upload reserves room for a file of n bytes, writes data into it as a
// frame's decoding does, and commits it.
func upload(t *testing.T, s *fileStore, max int64, data []byte, fileID, chat string) keptUpload {
	t.Helper()
	r, err := s.reserve(max, nil, nil)
	if err != nil {
		t.Fatalf("reserve: %v", err)
	}
	copy(r.buf, data)
	return s.commitUpload(r, len(data), fileID, "f.bin", "application/octet-stream", chat)
}

// TestFileStoreEvictsOldestFirst: keeping files past the bound forgets the
// oldest, whose FileIDs and references stop working.
func TestFileStoreEvictsOldestFirst(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(3 * size)
	var refs []string
	for i := range 5 {
		k := upload(t, s, size, fill(byte(i), size), fmt.Sprintf("upload-%d", i), "c")
		if k.ref == "" || k.inline != nil {
			t.Fatalf("a file of %d bytes kept as %+v; want a reference", size, k)
		}
		refs = append(refs, k.ref)
		checkStore(t, s, true)
	}
	for i := range 5 {
		f, err := s.upload(fmt.Sprintf("upload-%d", i))
		g, _, opened := s.open(refs[i], "c")
		if i < 2 {
			if err == nil || !errors.Is(err, platform.ErrInvalidMessage) || opened {
				t.Errorf("file %d: %v, opened %v; want it forgotten", i, err, opened)
			}
			continue
		}
		if err != nil || !opened || g != f || !f.equal(fill(byte(i), size)) {
			t.Fatalf("file %d: %v, opened %v; want it kept", i, err, opened)
		}
		s.unpin(f)
		s.unpin(g)
	}
	checkStore(t, s, true)
}

// TestFileStoreReserveWaits: room reserved for a file being read counts
// with the kept files; a reservation that does not fit waits until one
// ends, and gives up when told to.
func TestFileStoreReserveWaits(t *testing.T) { synctest.Test(t, testReserveWaits) }

func testReserveWaits(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(2 * size)
	a, err := s.reserve(size, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.reserve(size, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if _, err := s.reserve(size, stop, nil); !errors.Is(err, errFileWait) {
		t.Fatalf("a third reservation, stopped = %v; want errFileWait", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := s.reserve(size, nil, nil)
		if err == nil {
			r.release()
		}
		got <- err
	}()
	synctest.Wait() // it waits for room
	select {
	case err := <-got:
		t.Fatalf("a third reservation returned %v with no room", err)
	default:
	}
	a.release()
	a.release() // a second release does nothing
	if err := <-got; err != nil {
		t.Fatalf("the waiting reservation: %v", err)
	}
	copy(b.buf, fill(1, 10))
	if k := s.commitUpload(b, 10, "upload-1", "", "", "c"); k.inline == nil || k.ref != "" {
		t.Fatalf("a file of 10 bytes kept as %+v; want it inline", k)
	}
	b.release() // committed: nothing to give back
	checkStore(t, s, true)
	if used, _, _ := s.stats(); used != 10 {
		t.Fatalf("store counts %d bytes; want the 10 of the file kept", used)
	}
}

// TestFileStorePinnedForgottenCounts: a file forgotten while a tab
// fetches it stays counted, and in memory, until the fetch ends.
func TestFileStorePinnedForgottenCounts(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(2 * size)
	k := upload(t, s, size, fill(7, size), "upload-1", "c")
	f, ref, ok := s.open(k.ref, "c")
	if !ok || ref.chat != "c" {
		t.Fatal("open failed")
	}
	upload(t, s, size, fill(8, size), "upload-2", "c")
	// The third forgets the first, pinned, which still counts: the second
	// goes too.
	upload(t, s, size, fill(9, size), "upload-3", "c")
	for _, id := range []string{"upload-1", "upload-2"} {
		if _, err := s.upload(id); err == nil {
			t.Fatalf("%s still kept", id)
		}
	}
	if used, files, _ := s.stats(); used != 2*size || files != 1 {
		t.Fatalf("store counts %d bytes in %d files with a pinned forgotten file; want %d in 1", used, files, 2*size)
	}
	if !f.equal(fill(7, size)) {
		t.Fatal("a pinned file's bytes changed")
	}
	s.unpin(f)
	checkStore(t, s, true)
	if used, _, _ := s.stats(); used != size {
		t.Fatalf("store counts %d bytes after the fetch; want %d", used, size)
	}
}

// TestFileStoreShare: the bot's files are kept once per content, a user's
// file sent back refers to it, references work only for their chat, and a
// bot's file no reference names is forgotten.
func TestFileStoreShare(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(4 * size)
	up := upload(t, s, size, fill(1, size), "upload-1", "c")
	back, err := s.share(fill(1, size), "c", "back.bin", "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	if _, files, _ := s.stats(); files != 1 {
		t.Fatalf("%d files after sending a user's file back; want 1, shared", files)
	}
	other, err := s.share(fill(2, size), "d", "", "")
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.share(fill(2, size), "d", "", "")
	if err != nil || again == other {
		t.Fatalf("the same bytes again: %q, %v; want a new reference to the same file", again, err)
	}
	if _, files, refs := s.stats(); files != 2 || refs != 4 {
		t.Fatalf("%d files, %d references; want 2 and 4", files, refs)
	}
	if _, _, ok := s.open(other, "c"); ok {
		t.Fatal("a reference of chat d opened for chat c")
	}
	s.revoke(other, again)
	if _, files, _ := s.stats(); files != 1 {
		t.Fatalf("%d files after revoking every reference to the bot's file; want it forgotten", files)
	}
	s.revoke(up.ref, back) // the user's file stays, for Download
	if f, err := s.upload("upload-1"); err != nil {
		t.Fatalf("the user's file after its references were revoked: %v", err)
	} else {
		s.unpin(f)
	}
	if _, err := s.share(fill(3, 5*size), "c", "", ""); !platform.IsPermanent(err) || !errors.Is(err, platform.ErrFileTooLarge) {
		t.Fatalf("a file larger than the store: %v; want a permanent ErrFileTooLarge", err)
	}
	checkStore(t, s, true)
}

// TestFileStoreNoRoom: a bot's file that reservations leave no room for
// fails at once with ErrNoRoom, which is not permanent.
func TestFileStoreNoRoom(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(2 * size)
	r, err := s.reserve(2*size, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.share(fill(1, size), "c", "", ""); !errors.Is(err, ErrNoRoom) || platform.IsPermanent(err) {
		t.Fatalf("share with the store reserved: %v; want ErrNoRoom, not permanent", err)
	}
	if _, ok := s.putUpload(fill(1, 40<<10), "upload-1", "", "", "c"); ok {
		t.Fatal("putUpload with the store reserved: kept")
	}
	r.release()
	if _, err := s.share(fill(1, size), "c", "", ""); err != nil {
		t.Fatalf("share after the release: %v", err)
	}
	checkStore(t, s, true)
}

// TestFileStoreRefBound: references past maxFileRefs revoke the oldest.
func TestFileStoreRefBound(t *testing.T) {
	s := newFileStore(1 << 20)
	k := upload(t, s, 100<<10, fill(1, 100<<10), "upload-1", "c")
	f, err := s.upload("upload-1")
	if err != nil {
		t.Fatal(err)
	}
	for range maxFileRefs {
		s.ref(f, "c", "", "")
	}
	s.unpin(f)
	if _, _, ok := s.open(k.ref, "c"); ok {
		t.Fatal("the oldest reference still works past maxFileRefs")
	}
	if _, _, refs := s.stats(); refs != maxFileRefs {
		t.Fatalf("%d references; want %d", refs, maxFileRefs)
	}
}

// TestFileStoreConcurrent runs uploads, shares, fetches and revocations
// from many goroutines: the store never holds more than its bound, and
// once they are done it counts exactly the files it keeps.
func TestFileStoreConcurrent(t *testing.T) {
	const size = 64 << 10
	s := newFileStore(8 * size)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				data := fill(byte(g*50+i), size-i)
				k := upload(t, s, size, data, fmt.Sprintf("upload-%d-%d", g, i), "c")
				if f, r, ok := s.open(k.ref, "c"); ok {
					if !f.equal(data) || r.chat != "c" {
						t.Errorf("opened the wrong bytes")
					}
					s.unpin(f)
				}
				if ref, err := s.share(data, "d", "", ""); err == nil && i%3 == 0 {
					s.revoke(ref)
				}
				if used, _, _ := s.stats(); used > s.max {
					t.Errorf("%d bytes held; bound %d", used, s.max)
					return
				}
			}
		})
	}
	wg.Wait()
	checkStore(t, s, true)
}

// TestOffHeapTrim: a file read into a mapping made for the largest one
// keeps only the pages it needs.
func TestOffHeapTrim(t *testing.T) {
	b, m, ok := mapFile(4 << 20)
	if !ok {
		t.Skip("no memory outside the heap here")
	}
	copy(b, fill(5, 100_000))
	m.trim(100_000)
	if m.size != roundPages(100_000) {
		t.Fatalf("trimmed mapping of %d bytes; want %d", m.size, roundPages(100_000))
	}
	if !bytes.Equal(b[:100_000], fill(5, 100_000)) {
		t.Fatal("trim changed the bytes kept")
	}
	m.unmap()
	if m.mapped() {
		t.Fatal("still mapped after unmap")
	}
	m.unmap() // twice: nothing
}

// TestFileStoreRelease: an adapter that nothing reaches gives back the
// memory of the files it kept.
func TestFileStoreRelease(t *testing.T) {
	s := newFileStore(1 << 20)
	k := upload(t, s, 200<<10, fill(1, 200<<10), "upload-1", "c")
	if _, err := s.share(fill(2, 100<<10), "c", "", ""); err != nil {
		t.Fatal(err)
	}
	s.release()
	if used, files, refs := s.stats(); used != 0 || files != 0 || refs != 0 {
		t.Fatalf("after release: %d bytes, %d files, %d references; want none", used, files, refs)
	}
	if _, _, ok := s.open(k.ref, "c"); ok {
		t.Fatal("a reference works after release")
	}
}
