// Package testenv gives tests what they start from: an environment
// without the user's configuration, a store of their own.
package testenv

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// Main runs the tests of m with a configuration directory of their own
// (XDG_CONFIG_HOME, empty) and without FEEDPIPE_CONFIG, so that the
// user's feedpipe configuration file changes no test's flags, and with
// every catalog made from nothing a copy of one migrated once
// (catalog.CopyFreshCatalogs); it exits with their status. Call it from
// TestMain.
func Main(m *testing.M) {
	catalog.CopyFreshCatalogs()
	dir, err := os.MkdirTemp("", "feedpipe-test-config-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_CONFIG_HOME", dir)
	os.Unsetenv("FEEDPIPE_CONFIG")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Store is a new store in a temporary directory and its catalog, closed
// when the test ends.
func Store(t testing.TB) (*storedir.Store, *catalog.Catalog) {
	t.Helper()
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return st, cat
}

// Buffer is a buffer that a process or handler writes to while the test
// reads it.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
