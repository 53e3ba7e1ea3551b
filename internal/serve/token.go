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
	token, missing, err := readToken(path)
	if missing {
		return makeToken(path)
	}
	return token, false, err
}

// readToken reads the API token from path; missing reports that there is
// no such file.
func readToken(path string) (token string, missing bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", true, fmt.Errorf("serve: token file %s: %w", path, unwrap(err))
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
	token, err := writeNewToken(path)
	return token, err == nil, err
}

// writeNewToken writes a new random token to path, which must not exist.
func writeNewToken(path string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	token := hex.EncodeToString(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", fmt.Errorf("serve: make the token file %s: %w", path, unwrap(err))
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("serve: write the token file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("serve: write the token file %s: %w", path, err)
	}
	return token, f.Close()
}

// RotateToken replaces the token in the file at path with a new one, at
// once (a new file renamed over the old), and returns it. A feed-serve
// running on that file takes it within a second, and the old one opens
// nothing from then on.
func RotateToken(path string) (string, error) {
	if _, _, err := readToken(path); err != nil {
		return "", err
	}
	tmp := path + ".new"
	os.Remove(tmp)
	token, err := writeNewToken(tmp)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("serve: rotate the token: %w", err)
	}
	return token, nil
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
