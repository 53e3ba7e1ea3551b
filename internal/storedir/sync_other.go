//go:build !linux

package storedir

import "syscall"

// Sync makes every Lazy write to the store durable. Without Linux's
// syncfs(2) it syncs all file systems.
func (s *Store) Sync() error {
	syscall.Sync()
	return nil
}
