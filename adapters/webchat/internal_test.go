package webchat

// Accessors the package's own tests use to look inside.

// stats returns the bytes the store holds and the number of files and
// references it keeps.
func (s *fileStore) stats() (used int64, files, refs int) {
	s.mu.Lock()
	defer s.unlock()
	return s.used, s.kept.Len(), len(s.refs)
}

// lenLocked returns the number of chats kept.
func (cs *chats) lenLocked() int { return len(cs.byID) }

// bytesLocked returns the bytes of all histories.
func (cs *chats) bytesLocked() int { return cs.bytes }

// bytes returns the whole frame in one piece.
func (h *historyFrame) bytes() []byte {
	b := make([]byte, 0, h.size)
	h.each(func(p []byte) error { b = append(b, p...); return nil })
	return b
}
