// Package testdisk gives tests a small file system they can fill up, to
// check what a full disk does (Linux, as root: a tmpfs).
package testdisk
