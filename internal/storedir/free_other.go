//go:build !unix

package storedir

// FreeBytes is the space left on the store's file system: -1, unknown, on
// a system without statfs(2).
func (s *Store) FreeBytes() (int64, error) { return -1, nil }
