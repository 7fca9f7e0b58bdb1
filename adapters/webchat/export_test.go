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
