package catalog

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"github.com/feedpipe/feedpipe/internal/storedir"
)

// A test binary makes hundreds of catalogs from nothing, and migrating
// one costs 25 ms of CPU, 0.4 s under the race detector, mostly SQLite
// parsing the schema after each step. With templating on, a catalog made
// from nothing is written as a copy of one the migrations made once in
// the process: the same bytes, so that only the way to them differs.
var template struct {
	on   atomic.Bool
	once sync.Once
	file []byte
	err  error
}

// CopyFreshCatalogs turns templating on for the rest of the process: for
// test binaries only (testenv.Main), where catalogs come and go by the
// hundred; a command makes its store's catalog once, by the migrations.
func CopyFreshCatalogs() { template.on.Store(true) }

// fillFresh writes the template into path, the empty file of a catalog
// being made, when templating is on.
func fillFresh(ctx context.Context, path string) error {
	if !template.on.Load() {
		return nil
	}
	template.once.Do(func() { template.file, template.err = migratedFile(context.WithoutCancel(ctx)) })
	if template.err != nil {
		return template.err
	}
	return os.WriteFile(path, template.file, 0o600)
}

// migratedFile is the file of a catalog the migrations made in a
// directory of its own, once it is closed.
func migratedFile(ctx context.Context) ([]byte, error) {
	dir, err := os.MkdirTemp("", "feedpipe-catalog-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	st, err := storedir.Open(dir)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.CreatePrivate(File); err != nil {
		return nil, err
	}
	path := st.Path(File)
	c, err := open(ctx, st, path, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, err
	}
	if err := c.Close(); err != nil {
		return nil, err
	}
	// Its last connection closed, SQLite has written the WAL back into
	// the file and removed it: the file is the whole catalog.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, fmt.Errorf("catalog: template: %s-wal still holds %d bytes once closed", path, fi.Size())
	}
	return os.ReadFile(path)
}
