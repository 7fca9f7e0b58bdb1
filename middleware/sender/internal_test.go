package sender

// Accessors the package's own tests use to look inside.

// live returns the number of chats whose state is kept.
func (l *rateLimiter) live() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.chats)
}
