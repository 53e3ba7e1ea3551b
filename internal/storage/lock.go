package storage

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned when a lock is held by another process and the
// caller asked not to wait.
var ErrLocked = errors.New("held by another process")

// lockFile takes an exclusive flock(2) on path, creating it if needed. The
// lock belongs to the open file, so it is released when the process dies,
// however it dies. unlock releases it.
func lockFile(path string, wait bool) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("storage: lock: %w", err)
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("storage: lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("storage: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
