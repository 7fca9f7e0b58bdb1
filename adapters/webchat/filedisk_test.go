//go:build unix

package webchat

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestFileStoreOnDisk: a large file kept is on disk, in a file no
// directory names, read back whole by every reader; sending the same
// bytes again refers to it; forgetting it closes its file.
func TestFileStoreOnDisk(t *testing.T) {
	const size = 200 << 10
	dir := t.TempDir()
	s := newFileStore(1 << 20)
	s.dir = dir
	s.diskFailed = func(err error) { t.Errorf("disk failed: %v", err) }
	data := bytes.Repeat([]byte("herald "), size/7)
	k := upload(t, s, size, data, "upload-1", "c")

	f, err := s.upload("upload-1")
	if err != nil {
		t.Fatal(err)
	}
	if f.disk == nil || f.data != nil || f.mem.mapped() {
		t.Fatalf("file kept with disk %v, %d bytes in memory, mapped %v; want it on disk only", f.disk, len(f.data), f.mem.mapped())
	}
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("the directory names %d files; want none", len(names))
	}
	if got, err := f.read(); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read: %d bytes, %v; want the file", len(got), err)
	}
	if got, err := io.ReadAll(f.content()); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("content: %d bytes, %v; want the file", len(got), err)
	}
	s.unpin(f)

	// The same bytes sent back: the same file. Other bytes of the same
	// length: a file of their own.
	ref, err := s.share(data, "c", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if g, _, ok := s.open(ref, "c"); !ok || g != f {
		t.Fatalf("sharing the same bytes made another file")
	} else {
		s.unpin(g)
	}
	other := bytes.Clone(data)
	other[len(other)-1] ^= 1
	ref2, err := s.share(other, "c", "", "")
	if err != nil {
		t.Fatal(err)
	}
	g, _, ok := s.open(ref2, "c")
	if !ok || g == f || !g.equal(other) || g.equal(data) {
		t.Fatalf("sharing other bytes: opened %v, same file %v", ok, g == f)
	}
	s.unpin(g)

	// Forgotten: its file closed, its bytes freed.
	disk := f.disk
	s.revoke(k.ref)
	s.removeUpload("upload-1")
	if _, err := disk.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("a forgotten file's disk file reads with %v; want it closed", err)
	}
	checkStore(t, s, true)
	s.release()
	if _, err := g.disk.ReadAt(make([]byte, 1), 0); g.disk != nil && !errors.Is(err, os.ErrClosed) {
		t.Fatalf("after release, a kept file's disk file reads with %v; want it closed", err)
	}
}

// TestFileStoreDiskFails: where no file can be written, a large file is
// kept in memory, and the failure reported.
func TestFileStoreDiskFails(t *testing.T) {
	const size = 100 << 10
	s := newFileStore(1 << 20)
	s.dir = filepath.Join(t.TempDir(), "missing")
	var failures int
	s.diskFailed = func(error) { failures++ }
	data := fill(3, size)
	upload(t, s, size, data, "upload-1", "c")
	if _, err := s.share(fill(4, size), "c", "", ""); err != nil {
		t.Fatal(err)
	}
	if failures != 2 {
		t.Fatalf("%d failures reported; want 2", failures)
	}
	f, err := s.upload("upload-1")
	if err != nil {
		t.Fatal(err)
	}
	defer s.unpin(f)
	if got, err := f.read(); f.disk != nil || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("file on disk %v, read %v; want it in memory, whole", f.disk != nil, err)
	}
	checkStore(t, s, false)
}
