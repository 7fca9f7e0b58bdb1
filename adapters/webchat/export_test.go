package webchat

import "github.com/gorilla/websocket"

// DropConnections cuts every open tab's connection without a close frame,
// as a network failure would, and returns how many it cut.
func DropConnections(a *Adapter) int {
	a.mu.Lock()
	open := make([]*conn, 0, len(a.open))
	for c := range a.open {
		open = append(open, c)
	}
	a.mu.Unlock()
	for _, c := range open {
		c.shut(websocket.CloseAbnormalClosure, "", true)
	}
	return len(open)
}

// OpenTabs returns the number of open tab connections.
func OpenTabs(a *Adapter) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.open)
}

// ServerConns returns the connections Run's server holds open and how
// many it has closed to make room (0, 0 when it does not serve).
func ServerConns(a *Adapter) (open int, evicted uint64) {
	a.mu.Lock()
	srv := a.srv
	a.mu.Unlock()
	if srv == nil {
		return 0, 0
	}
	return srv.Open(), srv.Evicted()
}

// ServerConnCap is the cap on the connections of Run's server.
func ServerConnCap(a *Adapter) int { return a.cfg.MaxConnections + httpHeadroom }

// UploadSlotsTaken returns how many frames over ReadLimit are being read.
func UploadSlotsTaken(a *Adapter) int { return len(a.slots) }

// FileStoreStats returns the bytes the adapter's file store holds (kept
// files, room reserved for files being read, forgotten files still being
// fetched) and the number of files and references it keeps.
func FileStoreStats(a *Adapter) (used int64, files, refs int) { return a.files.stats() }

// UploadSlotsOf returns the adapter's upload slots.
func UploadSlotsOf(a *Adapter) int { return cap(a.slots) }

// FileStoreBytes returns the bytes the file store counts and the bytes of
// the files it keeps, which are equal when no file is being read or
// fetched.
func FileStoreBytes(a *Adapter) (used, kept int64) {
	s := a.files
	s.mu.Lock()
	defer s.unlock()
	for e := s.kept.Front(); e != nil; e = e.Next() {
		kept += e.Value.(*storedFile).size
	}
	return s.used, kept
}
