//go:build unix

package storedir

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// FreeBytes is the space left on the store's file system for a process
// that is not root (statfs(2): the blocks available, times their size).
func (s *Store) FreeBytes() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(s.Root, &st); err != nil {
		return 0, fmt.Errorf("store: statfs %s: %w", s.Root, err)
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
