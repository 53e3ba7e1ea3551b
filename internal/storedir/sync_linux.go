package storedir

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Sync makes every Lazy write to the store durable: one syncfs(2) of the
// store's file system instead of an fsync per file.
func (s *Store) Sync() error {
	d, err := s.root.Open(".")
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("store: sync %s: %w", s.Root, err)
	}
	return nil
}
