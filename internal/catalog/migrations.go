package catalog

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// The schema grows by migrations, one SQL file each in migrations/, named
// NNNN_what.sql: migration N takes a catalog from version N-1 to N (PRAGMA
// user_version) in one transaction, so that a catalog is at one version or
// the next, never between. schema.sql is the schema they make (TestSchema)
// and docs/store.md describes it (TestStoreDoc): keep both in step. A
// migration is never changed once released: a catalog past it would not
// run it again; a change is a new migration.

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrationSteps are the parts of migrations that SQL cannot do, by the
// migration's number: each runs after its SQL, in its transaction.
var migrationSteps = map[int]func(*Tx) error{
	6:  packStates,         // compresses feed_state's JSON columns (statepack.go)
	15: binStates,          // feed_state's JSON columns in their binary layout (statebin.go)
	17: keepLinksOfAliases, // a store that recorded an alias keeps its link index (links.go)
}

// A migration is one file of migrations/, and its Go step.
type migration struct {
	name string // the file's, without .sql
	sql  string
	step func(*Tx) error // nil for none
}

// migrations[i] takes a catalog from version i to i+1.
var migrations = func() []migration {
	m, err := loadMigrations(migrationFiles, migrationSteps)
	if err != nil {
		panic(err) // the files are part of the binary: a test meets it first
	}
	return m
}()

// loadMigrations reads the migrations in migrations/ of fsys, in order,
// with their steps: the files' numbers count from 0001 without a gap, and
// each step has its file.
func loadMigrations(fsys fs.FS, steps map[int]func(*Tx) error) ([]migration, error) {
	files, err := fs.Glob(fsys, "migrations/*.sql") // sorted
	if err != nil {
		return nil, fmt.Errorf("catalog: migrations: %w", err)
	}
	var out []migration
	for i, file := range files {
		name := strings.TrimSuffix(path.Base(file), ".sql")
		num, what, _ := strings.Cut(name, "_")
		if n, err := strconv.Atoi(num); err != nil || len(num) != 4 || n != i+1 || what == "" {
			return nil, fmt.Errorf("catalog: migration %s: the migration after %d is %04d_what.sql", file, i, i+1)
		}
		b, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, fmt.Errorf("catalog: migrations: %w", err)
		}
		out = append(out, migration{name: name, sql: string(b), step: steps[i+1]})
	}
	for n := range steps {
		if n < 1 || n > len(out) {
			return nil, fmt.Errorf("catalog: migration %d has a Go step but no file", n)
		}
	}
	return out, nil
}

// migrate brings the schema up to version to (len(migrations): the
// newest); a catalog newer than this binary knows is refused.
func (c *Catalog) migrate(ctx context.Context, to int) error {
	var version int
	if err := c.readRow(ctx, once, `PRAGMA user_version`).Scan(&version); err != nil {
		return fmt.Errorf("catalog: open %s: %w", c.path, err)
	}
	if version > len(migrations) {
		return fmt.Errorf("catalog: %s has schema version %d, newer than this feedpipe knows (%d): use a newer feedpipe", c.path, version, len(migrations))
	}
	for v := version; v < to; v++ {
		m := migrations[v]
		err := c.Update(ctx, func(t *Tx) error {
			// A second process may have migrated it meanwhile: look again
			// inside the write transaction.
			var now int
			if err := t.readRow(once, `PRAGMA user_version`).Scan(&now); err != nil {
				return err
			}
			if now > v {
				return nil
			}
			t.unrecorded = v+1 < changesSchema
			if _, err := t.write(once, m.sql); err != nil {
				return err
			}
			if m.step != nil {
				if err := m.step(t); err != nil {
					return err
				}
			}
			_, err := t.write(once, fmt.Sprintf(`PRAGMA user_version = %d`, v+1))
			return err
		})
		if err != nil {
			return fmt.Errorf("catalog: migrate %s to schema version %d (%s): %w", c.path, v+1, m.name, err)
		}
	}
	return nil
}
