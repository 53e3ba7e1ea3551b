package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// writeNew writes a payload file at key whole or not at all, without a
// sync (Store.Sync makes it durable). A file already at key is kept: a
// payload's name is its content's hash.
//
// The data goes into an unnamed file (O_TMPFILE) in the payload's
// directory, which is then given its name (linkat): a few system calls,
// where a named temporary file and a rename take a dozen through package
// os, and nothing is left behind by a crash in between. The directory is
// opened through the store's root, so the file lands inside the store
// whatever links are planted in it. Where the file system has no
// O_TMPFILE, or /proc is missing, it falls back to writeFileAtomic.
func (s *Store) writeNew(key string, data []byte) error {
	if noTmpfile.Load() {
		return s.writeFileAtomic(key, data, Lazy)
	}
	dirKey, name := path.Split(key)
	dir, err := s.root.Open(dirKey)
	if errors.Is(err, fs.ErrNotExist) {
		// A new day.
		if err := s.root.MkdirAll(dirKey, 0o755); err != nil {
			return fmt.Errorf("store: %w", err)
		}
		dir, err = s.root.Open(dirKey)
	}
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer dir.Close()
	dirfd := int(dir.Fd())
	fd, err := openTmpfile(dirfd)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
		noTmpfile.Store(true)
		return s.writeFileAtomic(key, data, Lazy)
	}
	if err != nil {
		return fmt.Errorf("store: write %s: %w", key, err)
	}
	closed := false
	defer func() {
		if !closed {
			unix.Close(fd)
		}
	}()
	for rest := data; len(rest) > 0; {
		n, err := unix.Write(fd, rest)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("store: write %s: %w", key, err)
		}
		rest = rest[n:]
	}
	err = unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
	switch {
	case errors.Is(err, unix.EEXIST):
		return nil // stored already
	case errors.Is(err, unix.ENOENT):
		// No /proc, or the directory went away (pruned) since.
		if _, err := os.Stat("/proc/self/fd"); err != nil {
			noTmpfile.Store(true)
		}
		return s.writeFileAtomic(key, data, Lazy)
	case err != nil:
		return fmt.Errorf("store: write %s: %w", key, err)
	}
	closed = true
	if err := unix.Close(fd); err != nil {
		s.root.Remove(key)
		return fmt.Errorf("store: write %s: %w", key, err)
	}
	return nil
}

// noTmpfile is set once the store's file system has no O_TMPFILE, or
// there is no /proc to link such a file by: then every payload goes the
// way of writeFileAtomic at once.
var noTmpfile atomic.Bool

// openTmpfile opens a new unnamed file in the directory dirfd for writing, readable by
// its owner only, as os.CreateTemp makes files.
func openTmpfile(dirfd int) (int, error) {
	for {
		fd, err := unix.Openat(dirfd, ".", unix.O_WRONLY|unix.O_TMPFILE|unix.O_CLOEXEC, 0o600)
		if !errors.Is(err, unix.EINTR) {
			return fd, err
		}
	}
}
