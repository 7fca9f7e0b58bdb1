//go:build !unix

package webchat_test

// lowerPriority does nothing where priorities are not Unix's.
func lowerPriority(int) {}
