package webchat

import (
	"bytes"
	"container/list"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/heraldbot/herald/platform"
)

// largeFile is the size above which a file is shown by reference: its
// bytes are kept off the Go heap, in the adapter's file store (on disk,
// see diskFile), and a tab fetches them over HTTP (see serveFile), while
// the frames and the history carry only the reference. A file of at most largeFile bytes
// travels inline, as base64 in the frame, as before: one request fewer,
// and a small copy in the history.
const largeFile = 32 << 10

// Bounds of the file store beyond its bytes.
const (
	// maxFiles bounds the files kept, whatever their sizes.
	maxFiles = 10_000
	// maxFileRefs bounds the references to kept files that tabs may
	// fetch; past it, the oldest are revoked.
	maxFileRefs = 20_000
)

// Errors of the file store.
var (
	// ErrNoRoom means a file the bot sent could not be kept for the
	// chat's tabs at the moment: files being read from tabs and files
	// being fetched by tabs hold the memory [Config.UploadBytes] allows.
	// It is not permanent: a retry a moment later finds room.
	ErrNoRoom = errors.New("webchat: no room for the file now (files being uploaded or downloaded hold Config.UploadBytes)")

	// errFileWait ends a tab's connection when its file waited too long
	// for room in the file store.
	errFileWait = errors.New("webchat: a file waited too long for room in the file store")
)

// fileStore keeps the files of the adapter's chats that are held by
// reference: the files users sent (kept for [Adapter.Download], sending
// by FileID, and showing), the bot's files larger than largeFile, and
// room reserved for the files being read from tabs. It bounds all of
// them together in bytes, by max (Config.UploadBytes): reserving room or
// keeping a file forgets the oldest kept files to make room, and a file
// forgotten while a tab is fetching it stays counted until the fetch
// ends. The bot's files are kept once per content: sending the same
// bytes again, such as a user's file echoed back, refers to the same
// kept file.
//
// Files are reached two ways: a user's file by its FileID
// ("upload-" and its message's ID), and any kept file through a
// reference, a random ID that names it for the tabs of one chat (see
// serveFile). A reference is made for each attachment of each message,
// and revoked when the message is deleted or the file forgotten.
//
// A fileStore is safe for concurrent use. Its lock may be taken with the
// Adapter's mu held, never the other way round.
type fileStore struct {
	max  int64
	seed maphash.Seed
	// dir is where large files are written (see diskFile); "" means
	// os.TempDir(). diskFailed is called, outside the lock, when a file
	// could not be written there and is kept in memory instead.
	dir        string
	diskFailed func(error)

	mu       sync.Mutex
	used     int64     // bytes of kept files, reservations and forgotten pinned files
	kept     list.List // of *storedFile, oldest first
	byHash   map[uint64][]*storedFile
	uploads  map[string]*storedFile // by FileID
	refs     map[string]*fileRef    // by reference ID
	refOrder list.List              // of *fileRef, oldest first
	room     chan struct{}          // closed, and replaced, when bytes are freed
	// unmapping and closing hold the mappings and disk files of files
	// freed under the lock, which unlock gives back once the lock is
	// released: a syscall that frees megabytes has no place under a lock
	// every tab and send takes.
	unmapping []offHeap
	closing   []*os.File
}

// storedFile is one file in the store.
type storedFile struct {
	data   []byte   // the bytes when in memory; off the heap when mem is mapped
	mem    offHeap  // data's mapping, if any
	disk   *os.File // the bytes when on disk (data is nil), unlinked
	size   int64    // the file's length
	hash   uint64
	elem   *list.Element       // in kept; nil once forgotten
	pins   int                 // readers using data (fetches, downloads)
	upload string              // its FileID when a user sent it, else ""
	refs   map[string]*fileRef // the references to it
	// fileName and mime describe a user's file.
	fileName, mime string
}

// fileRef names a stored file for the tabs of one chat.
type fileRef struct {
	id   string
	file *storedFile
	chat string
	elem *list.Element // in refOrder
	// fileName and mime are how the message shows the file.
	fileName, mime string
}

func newFileStore(max int) *fileStore {
	return &fileStore{
		max:     int64(max),
		seed:    maphash.MakeSeed(),
		byHash:  make(map[uint64][]*storedFile),
		uploads: make(map[string]*storedFile),
		refs:    make(map[string]*fileRef),
		room:    make(chan struct{}),
	}
}

// reservation is room in the store for a file being read from a tab,
// with a buffer for its bytes. The reader owns it until it hands it to
// commitUpload or gives it back with release.
type reservation struct {
	s    *fileStore
	n    int64   // the bytes reserved
	buf  []byte  // len n: where the file's bytes are decoded
	mem  offHeap // buf's mapping, if any
	done bool
}

// reserve waits until the store has room for n more bytes, forgetting
// the oldest kept files to make it, and reserves it with a buffer of n
// bytes. It gives up with errFileWait when stop is closed or timeout
// fires first. n is at most max.
func (s *fileStore) reserve(n int64, stop <-chan struct{}, timeout <-chan time.Time) (*reservation, error) {
	for {
		s.mu.Lock()
		if s.makeRoomLocked(n) {
			s.used += n
			s.unlock()
			r := &reservation{s: s, n: n}
			var ok bool
			if r.buf, r.mem, ok = mapFile(int(n)); !ok {
				r.buf = make([]byte, n)
			}
			return r, nil
		}
		room := s.room
		s.unlock()
		select {
		case <-room:
		case <-stop:
			return nil, errFileWait
		case <-timeout:
			return nil, errFileWait
		}
	}
}

// release gives the reservation back, if it was not committed. It may be
// called more than once.
func (r *reservation) release() {
	if r == nil || r.done {
		return
	}
	r.done = true
	r.buf = nil
	r.mem.unmap()
	s := r.s
	s.mu.Lock()
	s.freedLocked(r.n)
	s.unlock()
}

// makeRoomLocked forgets the oldest kept files, pinned ones included,
// until n more bytes fit within max and the store has room for one more
// file, and reports whether they fit. Bytes reserved, and forgotten
// files still pinned, cannot be freed here.
func (s *fileStore) makeRoomLocked(n int64) bool {
	for (s.used+n > s.max || s.kept.Len() >= maxFiles) && s.kept.Len() > 0 {
		s.forgetLocked(s.kept.Front().Value.(*storedFile))
	}
	return s.used+n <= s.max
}

// freedLocked takes n bytes off the store's use and wakes the readers
// waiting for room.
func (s *fileStore) freedLocked(n int64) {
	if n == 0 {
		return
	}
	s.used -= n
	close(s.room)
	s.room = make(chan struct{})
}

// forgetLocked takes f out of the store: its FileID and references stop
// working, and its bytes are freed now, or when its last reader unpins
// it.
func (s *fileStore) forgetLocked(f *storedFile) {
	if f.elem == nil {
		return
	}
	s.kept.Remove(f.elem)
	f.elem = nil
	if same := s.byHash[f.hash]; len(same) == 1 {
		delete(s.byHash, f.hash)
	} else {
		for i, g := range same {
			if g == f {
				s.byHash[f.hash] = append(same[:i:i], same[i+1:]...)
				break
			}
		}
	}
	if f.upload != "" {
		delete(s.uploads, f.upload)
	}
	for id, r := range f.refs {
		delete(s.refs, id)
		s.refOrder.Remove(r.elem)
	}
	f.refs = nil
	if f.pins == 0 {
		s.freeLocked(f)
	}
}

// freeLocked frees a forgotten file's bytes: at once in the count, and
// its mapping, if any, when the lock is released (see unlock).
func (s *fileStore) freeLocked(f *storedFile) {
	f.data = nil
	if f.mem.mapped() {
		s.unmapping = append(s.unmapping, f.mem)
		f.mem = offHeap{}
	}
	if f.disk != nil {
		s.closing = append(s.closing, f.disk)
		f.disk = nil
	}
	s.freedLocked(f.size)
}

// unlock releases the lock, then unmaps the memory, and closes the disk
// files, of the files freed while it was held.
func (s *fileStore) unlock() {
	m, c := s.unmapping, s.closing
	s.unmapping, s.closing = nil, nil
	s.mu.Unlock()
	for i := range m {
		m[i].unmap()
	}
	for _, f := range c {
		f.Close()
	}
}

// insertLocked keeps f, whose bytes are already counted in used, as the
// newest file.
func (s *fileStore) insertLocked(f *storedFile) {
	f.elem = s.kept.PushBack(f)
	s.byHash[f.hash] = append(s.byHash[f.hash], f)
	if f.upload != "" {
		s.uploads[f.upload] = f
	}
}

// keptUpload is how a user's file kept in the store is shown: inline,
// its bytes on the heap (which never change), for a small file, or by a
// reference for the tabs of its chat.
type keptUpload struct {
	inline []byte
	ref    string
}

// commitUpload keeps the first n bytes of r's buffer as the file a user
// sent to chat, under fileID, and ends the reservation: a large file
// is written to disk, or else keeps the buffer's memory (its pages
// beyond n given back), and a small one is copied to the heap.
func (s *fileStore) commitUpload(r *reservation, n int, fileID, fileName, mime, chat string) keptUpload {
	f := &storedFile{upload: fileID, fileName: fileName, mime: mime, size: int64(n)}
	f.hash = maphash.Bytes(s.seed, r.buf[:n])
	switch {
	case n <= largeFile:
		f.data = bytes.Clone(r.buf[:n])
		r.mem.unmap()
	case s.toDisk(f, r.buf[:n]):
		r.mem.unmap()
	case r.mem.mapped():
		r.mem.trim(n)
		f.data, f.mem = r.buf[:n:n], r.mem
	default:
		f.data = bytes.Clone(r.buf[:n])
	}
	r.done, r.buf, r.mem = true, nil, offHeap{}
	s.mu.Lock()
	defer s.unlock()
	s.freedLocked(r.n - int64(n)) // the reservation becomes the file
	return s.keepUploadLocked(f, chat)
}

// putUpload keeps data, a file a user sent to chat in a frame of at
// most ReadLimit (so on the heap already), under fileID, making room for
// it at once, and reports whether it fitted. A large one is moved off
// the heap.
func (s *fileStore) putUpload(data []byte, fileID, fileName, mime, chat string) (keptUpload, bool) {
	n := int64(len(data))
	f := &storedFile{data: data, size: n, upload: fileID, fileName: fileName, mime: mime, hash: maphash.Bytes(s.seed, data)}
	s.mu.Lock()
	if !s.makeRoomLocked(n) {
		s.unlock()
		return keptUpload{}, false
	}
	s.used += n
	s.unlock()
	if len(data) > largeFile {
		s.offHeap(f, data)
	}
	s.mu.Lock()
	defer s.unlock()
	return s.keepUploadLocked(f, chat), true
}

// keepUploadLocked keeps f, a user's file whose bytes are counted in
// used already, as the newest file, and returns how the chat shows it.
func (s *fileStore) keepUploadLocked(f *storedFile, chat string) keptUpload {
	s.insertLocked(f)
	if f.size <= largeFile {
		return keptUpload{inline: f.data}
	}
	return keptUpload{ref: s.refLocked(f, chat, f.fileName, f.mime)}
}

// removeUpload forgets the user's file fileID, one whose message was not
// delivered.
func (s *fileStore) removeUpload(fileID string) {
	s.mu.Lock()
	defer s.unlock()
	if f := s.uploads[fileID]; f != nil {
		s.forgetLocked(f)
	}
}

// upload returns the user's file fileID, pinned (the caller unpins it),
// or an error wrapping platform.ErrInvalidMessage.
func (s *fileStore) upload(fileID string) (*storedFile, error) {
	s.mu.Lock()
	defer s.unlock()
	f := s.uploads[fileID]
	if f == nil {
		return nil, fmt.Errorf("%w: file %s is no longer kept", platform.ErrInvalidMessage, fileID)
	}
	f.pins++
	return f, nil
}

// unpin ends a reader's use of f's bytes, freeing them if f was
// forgotten meanwhile.
func (s *fileStore) unpin(f *storedFile) {
	s.mu.Lock()
	defer s.unlock()
	s.unpinLocked(f)
}

func (s *fileStore) unpinLocked(f *storedFile) {
	f.pins--
	if f.pins == 0 && f.elem == nil {
		s.freeLocked(f)
	}
}

// share returns a reference, for the tabs of chat, to a kept file with
// the bytes data, a large file the bot sends: the file kept already with
// those bytes (a user's file echoed back, a file sent before), or a copy
// of data kept as the newest file. It fails, without waiting, with a
// permanent error wrapping platform.ErrFileTooLarge for a file larger
// than the store, and with ErrNoRoom when reservations and fetches of
// forgotten files leave no room for it.
func (s *fileStore) share(data []byte, chat, fileName, mime string) (string, error) {
	n := int64(len(data))
	if n > s.max {
		return "", platform.Permanent(fmt.Errorf("%w: a file of %d bytes, over the %d bytes of files the chat keeps (Config.UploadBytes)",
			platform.ErrFileTooLarge, n, s.max))
	}
	h := maphash.Bytes(s.seed, data)
	// Compare with the files of the same hash, pinned, outside the lock.
	s.mu.Lock()
	same := slices.Clone(s.byHash[h])
	for _, f := range same {
		f.pins++
	}
	s.unlock()
	var match *storedFile
	for _, f := range same {
		if match == nil && f.equal(data) {
			match = f
		}
	}
	s.mu.Lock()
	for _, f := range same {
		s.unpinLocked(f)
	}
	if match != nil && match.elem != nil {
		s.kept.MoveToBack(match.elem) // used again: forgotten last
		id := s.refLocked(match, chat, fileName, mime)
		s.unlock()
		return id, nil
	}
	if !s.makeRoomLocked(n) {
		s.unlock()
		return "", ErrNoRoom
	}
	s.used += n
	s.unlock()

	f := &storedFile{hash: h, size: n, data: data}
	if !s.offHeap(f, data) {
		f.data = bytes.Clone(data)
	}
	s.mu.Lock()
	defer s.unlock()
	s.insertLocked(f)
	return s.refLocked(f, chat, fileName, mime), nil
}

// ref returns a new reference, for the tabs of chat, to f, a file the
// caller has pinned, or "" if f was forgotten meanwhile.
func (s *fileStore) ref(f *storedFile, chat, fileName, mime string) string {
	s.mu.Lock()
	defer s.unlock()
	if f.elem == nil {
		return ""
	}
	return s.refLocked(f, chat, fileName, mime)
}

// refLocked makes a reference to f, a kept file, for the tabs of chat,
// revoking the oldest reference when there are maxFileRefs.
func (s *fileStore) refLocked(f *storedFile, chat, fileName, mime string) string {
	if s.refOrder.Len() >= maxFileRefs {
		s.revokeLocked(s.refOrder.Front().Value.(*fileRef))
	}
	r := &fileRef{id: rand.Text(), file: f, chat: chat, fileName: fileName, mime: mime}
	r.elem = s.refOrder.PushBack(r)
	s.refs[r.id] = r
	if f.refs == nil {
		f.refs = make(map[string]*fileRef)
	}
	f.refs[r.id] = r
	return r.id
}

// revoke removes the references ids; a file the bot sent that no
// reference names any more is forgotten.
func (s *fileStore) revoke(ids ...string) {
	if len(ids) == 0 {
		return
	}
	s.mu.Lock()
	defer s.unlock()
	for _, id := range ids {
		if r := s.refs[id]; r != nil {
			s.revokeLocked(r)
		}
	}
}

func (s *fileStore) revokeLocked(r *fileRef) {
	delete(s.refs, r.id)
	s.refOrder.Remove(r.elem)
	f := r.file
	delete(f.refs, r.id)
	if len(f.refs) == 0 && f.upload == "" {
		s.forgetLocked(f)
	}
}

// open returns the file the reference id names for the tabs of chat,
// pinned (the caller unpins it), with the reference, or ok false when id
// names no kept file of that chat.
func (s *fileStore) open(id, chat string) (f *storedFile, r fileRef, ok bool) {
	s.mu.Lock()
	defer s.unlock()
	ref := s.refs[id]
	if ref == nil || ref.chat != chat {
		return nil, fileRef{}, false
	}
	ref.file.pins++
	return ref.file, *ref, true
}

// release forgets every kept file, for an adapter that nothing reaches
// any more, so that no reader is left either: the memory of files kept off
// the heap would otherwise outlive it.
// It wakes no one (no one is left to wait), so it may run outside the
// synctest bubble, if any, the store was made in.
func (s *fileStore) release() {
	s.mu.Lock()
	var maps []offHeap
	var disks []*os.File
	for e := s.kept.Front(); e != nil; e = e.Next() {
		f := e.Value.(*storedFile)
		if f.mem.mapped() {
			maps = append(maps, f.mem)
		}
		if f.disk != nil {
			disks = append(disks, f.disk)
		}
	}
	s.kept.Init()
	clear(s.byHash)
	clear(s.uploads)
	clear(s.refs)
	s.refOrder.Init()
	s.used = 0
	maps = append(maps, s.unmapping...)
	disks = append(disks, s.closing...)
	s.unmapping, s.closing = nil, nil
	s.mu.Unlock()
	for i := range maps {
		maps[i].unmap()
	}
	for _, f := range disks {
		f.Close()
	}
}

// toDisk writes data, the bytes of f, a large file not yet in the store,
// to a file of its own on disk (see diskFile), and reports whether it
// did; if it did not, f is unchanged, and the failure is reported to
// diskFailed.
func (s *fileStore) toDisk(f *storedFile, data []byte) bool {
	dir := s.dir
	if dir == "" {
		dir = os.TempDir()
	}
	d, err := diskFile(dir, data)
	if err != nil {
		if s.diskFailed != nil && !errors.Is(err, errors.ErrUnsupported) {
			s.diskFailed(err)
		}
		return false
	}
	f.data, f.disk = nil, d
	return true
}

// offHeap moves data, the bytes of f, a large file not yet in the store,
// off the heap: to disk, or else to a mapping, and reports whether it
// did.
func (s *fileStore) offHeap(f *storedFile, data []byte) bool {
	if s.toDisk(f, data) {
		return true
	}
	b, m, ok := mapFile(len(data))
	if ok {
		copy(b, data)
		f.data, f.mem = b, m
	}
	return ok
}

// content returns a reader of f's bytes. f must be pinned.
func (f *storedFile) content() io.ReadSeeker {
	if f.disk != nil {
		return io.NewSectionReader(f.disk, 0, f.size)
	}
	return bytes.NewReader(f.data)
}

// read returns a copy of f's bytes, on the heap. f must be pinned.
func (f *storedFile) read() ([]byte, error) {
	if f.disk == nil {
		return bytes.Clone(f.data), nil
	}
	b := make([]byte, f.size)
	if _, err := f.disk.ReadAt(b, 0); err != nil {
		return nil, fmt.Errorf("webchat: reading a kept file from disk: %w", err)
	}
	return b, nil
}

// equal reports whether f's bytes are data. f must be pinned.
func (f *storedFile) equal(data []byte) bool {
	if f.size != int64(len(data)) {
		return false
	}
	if f.disk == nil {
		return bytes.Equal(f.data, data)
	}
	buf := make([]byte, min(len(data), 64<<10))
	for off := 0; off < len(data); {
		n, err := f.disk.ReadAt(buf[:min(len(buf), len(data)-off)], int64(off))
		if !bytes.Equal(buf[:n], data[off:off+n]) || (err != nil && off+n < len(data)) {
			return false
		}
		off += n
	}
	return true
}
