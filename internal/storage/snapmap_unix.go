//go:build unix

package storage

import (
	"os"
	"syscall"
)

// mapRegion maps n bytes of f from off, read-only: reading a snapshot's
// index (26 MB at 100,000 feeds) into fresh memory cost feed-store more
// system time than everything else it does at start-up, nearly all of
// it faulting the new pages in; a mapping shares the page cache's. The
// store never changes a snapshot in place (a new one is renamed over it),
// so the mapping stays as it was read for as long as it is kept. It falls
// back to reading when the file cannot be mapped.
func mapRegion(f *os.File, off, n int64) (b []byte, unmap func(), err error) {
	page := int64(os.Getpagesize())
	start := off &^ (page - 1)
	if n > 0 && off-start+n == int64(int(off-start+n)) {
		if m, err := syscall.Mmap(int(f.Fd()), start, int(off-start+n), syscall.PROT_READ, syscall.MAP_SHARED); err == nil {
			return m[off-start:], func() { syscall.Munmap(m) }, nil
		}
	}
	return readRegion(f, off, n)
}
