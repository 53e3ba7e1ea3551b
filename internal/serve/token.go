package serve

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// TokenFile is the token's file in the store, unless --token-file names
// another.
const TokenFile = "serve.token"

// MinTokenLen is the shortest token feed-serve takes from a file.
const MinTokenLen = 16

// LoadToken reads the API token from path, or, when there is no such file,
// makes one there (32 random bytes in hex, mode 0600, refusing a link in
// its place) and reports that it did. A token file that others can read,
// or that is not a regular file, is refused.
func LoadToken(path string) (token string, created bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return makeToken(path)
	case err != nil:
		return "", false, fmt.Errorf("serve: token file %s: %w (a link is refused)", path, unwrap(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, fmt.Errorf("serve: token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", false, fmt.Errorf("serve: token file %s is not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", false, fmt.Errorf("serve: token file %s can be read by others (mode %v): chmod 600 %s", path, fi.Mode().Perm(), path)
	}
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	token = strings.TrimSpace(string(b[:n]))
	if len(token) < MinTokenLen || strings.ContainsAny(token, " \t\r\n") {
		return "", false, fmt.Errorf("serve: token file %s: a token is one word of at least %d characters (delete the file and a new one is made)", path, MinTokenLen)
	}
	return token, false, nil
}

func makeToken(path string) (string, bool, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", false, err
	}
	token := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("serve: make the token file %s: %w", path, unwrap(err))
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		return "", false, fmt.Errorf("serve: write the token file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", false, err
	}
	return token, true, f.Close()
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
