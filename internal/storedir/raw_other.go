//go:build !linux

package storedir

// writeNew writes a payload file at path whole or not at all, without a
// sync (Store.Sync makes it durable).
func (s *Store) writeNew(key string, data []byte) error { return s.writeFileAtomic(key, data, Lazy) }
