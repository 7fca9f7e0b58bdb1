//go:build !unix

package webchat

// offHeap is the memory of a file outside the Go heap, which this system
// does not give the adapter: its files are kept on the heap. See the
// unix version.
type offHeap struct{}

// mapFile reports that no memory outside the heap is available.
func mapFile(int) ([]byte, offHeap, bool) { return nil, offHeap{}, false }

func (*offHeap) trim(int)     {}
func (*offHeap) unmap()       {}
func (*offHeap) mapped() bool { return false }
