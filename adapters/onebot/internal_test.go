package onebot

// Accessors the package's own tests use to look inside.

// pendingCount returns the number of actions awaiting a response.
func (c *conn) pendingCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.pending)
}
