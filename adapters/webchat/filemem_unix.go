//go:build unix

package webchat

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// offHeap is a mapping of anonymous memory outside the Go heap that holds
// one file's bytes, or the zero value for a file on the heap: the room a
// file is read into from a tab, and a large file kept where none can be
// written to disk (see diskFile).
//
// The adapter keeps such files here rather than on the heap because the
// garbage collector lets the heap grow to twice what is live before it
// collects: 64 MiB of kept files on the heap let the process reach well
// over 128 MiB, and stay there after a flood of uploads, while a mapping
// costs the pages written to it, and no more once unmapped. The kernel
// backs a mapping's pages only when they are written, so a mapping made
// for the largest file a frame can bring costs what the file turns out
// to be.
//
// INVARIANT: a mapping is unmapped only by the fileStore, under its lock,
// once no reader has the file pinned; its bytes never reach a frame, an
// event or a caller (Download copies them).
type offHeap struct {
	p    unsafe.Pointer
	size uintptr // bytes mapped from p, a whole number of pages
}

var pageSize = uintptr(os.Getpagesize())

// roundPages returns n rounded up to a whole number of pages.
func roundPages(n int) uintptr { return (uintptr(n) + pageSize - 1) &^ (pageSize - 1) }

// mapFile returns n bytes of zeroed memory outside the Go heap and their
// mapping, or ok false when the kernel refused it (the caller then uses
// the heap). n must be positive.
func mapFile(n int) (b []byte, m offHeap, ok bool) {
	size := roundPages(n)
	p, err := unix.MmapPtr(-1, 0, nil, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, offHeap{}, false
	}
	return unsafe.Slice((*byte)(p), n), offHeap{p: p, size: size}, true
}

// trim unmaps the whole pages of m beyond its first n bytes, once a file
// read into a mapping made for the largest one turns out smaller.
func (m *offHeap) trim(n int) {
	keep := roundPages(max(n, 1))
	if m.p == nil || keep >= m.size {
		return
	}
	if unix.MunmapPtr(unsafe.Add(m.p, keep), m.size-keep) == nil {
		m.size = keep
	}
}

// unmap gives m's memory back to the kernel; m is the zero value
// afterwards. Unmapping the zero value does nothing.
func (m *offHeap) unmap() {
	if m.p == nil {
		return
	}
	// An error means the mapping was not there: nothing to give back.
	_ = unix.MunmapPtr(m.p, m.size)
	*m = offHeap{}
}

// mapped reports whether m holds a mapping.
func (m *offHeap) mapped() bool { return m.p != nil }
