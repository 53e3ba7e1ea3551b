//go:build !unix

package storage

import "os"

// mapRegion reads n bytes of f from off (see snapmap_unix.go).
func mapRegion(f *os.File, off, n int64) (b []byte, unmap func(), err error) {
	return readRegion(f, off, n)
}
