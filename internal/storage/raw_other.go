//go:build !linux

package storage

// writeNew writes a payload file at path whole or not at all, without a
// sync (Store.Sync makes it durable).
func writeNew(path string, data []byte) error { return writeFileAtomic(path, data, Lazy) }
