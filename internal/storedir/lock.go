package storedir

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
func (s *Store) lockFile(key string, wait bool) (unlock func(), err error) {
	if err := checkKey(key); err != nil {
		return nil, err
	}
	path := s.Path(key)
	f, err := s.root.OpenFile(key, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: lock: %w", err)
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
			return nil, fmt.Errorf("store: lock %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("store: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// The store's locks. Each guards the files one kind of writer appends to:
// feed-store's entries, events, index and state; feed-fetch's fetches.
const (
	StoreLock = "lock"
	FetchLock = "lock.fetch"
)

// Lock takes one of the store's writer locks, so that two pipelines run at
// once can neither store one entry twice nor tear each other's lines. With
// wait false it fails at once with ErrLocked when another process holds
// it; with wait true it blocks, after calling waiting (if not nil) so that
// the caller can say why nothing happens.
func (s *Store) Lock(name string, wait bool, waiting func()) (unlock func(), err error) {
	unlock, err = s.lockFile(name, false)
	if err == nil || !wait || !errors.Is(err, ErrLocked) {
		return unlock, err
	}
	if waiting != nil {
		waiting()
	}
	return s.lockFile(name, true)
}
