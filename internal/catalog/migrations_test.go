package catalog

import (
	"bytes"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

var update = flag.Bool("update", false, "rewrite schema.sql from the migrations")

// schemaFile is the schema every migration makes, as SQLite keeps it: a
// golden file, so that a change of the schema shows in review as a diff of
// SQL, and docs/store.md is checked against it (TestStoreDoc).
const schemaFile = "schema.sql"

// dumpSchema is the schema of c as schemaFile holds it: each table
// followed by its indexes and triggers, by name.
func dumpSchema(t *testing.T, c *Catalog) []byte {
	t.Helper()
	rows, err := c.db.Query(`SELECT sql FROM sqlite_schema WHERE sql IS NOT NULL
		ORDER BY tbl_name, CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var version int
	if err := c.db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "-- The catalog's schema at version %d (PRAGMA user_version), as SQLite\n", version)
	b.WriteString("-- keeps it: what the migrations make. Written by\n")
	b.WriteString("-- go test ./internal/catalog -run TestSchema -update; do not edit.\n")
	for rows.Next() {
		var sql string
		if err := rows.Scan(&sql); err != nil {
			t.Fatal(err)
		}
		b.WriteString("\n" + sql + ";\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// migrateTemp is a catalog the migrations make from nothing, in a store
// of its own: not a copy (CopyFreshCatalogs), whatever the tests' setting.
func migrateTemp(t *testing.T) *Catalog {
	t.Helper()
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreatePrivate(File); err != nil {
		t.Fatal(err)
	}
	c, err := open(ctx, st, st.Path(File), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dumpAll is all a catalog holds: its page size, schema and every row
// of every table, the full-text index's own included.
func dumpAll(t *testing.T, c *Catalog) string {
	t.Helper()
	var b strings.Builder
	var pageSize int
	if err := c.db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "page_size %d\n%s", pageSize, dumpSchema(t, c))
	var tables []string
	rows, err := c.db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	for _, table := range tables {
		rows, err := c.db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %q\n", table, vals)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
	}
	return b.String()
}

// TestCopiedCatalogIsMigrated: a catalog Open makes from nothing while
// CopyFreshCatalogs is on, as in every test here, is the one the
// migrations make: the same page size, schema and rows, and its owner's
// only.
func TestCopiedCatalogIsMigrated(t *testing.T) {
	if !template.on.Load() {
		t.Fatal("CopyFreshCatalogs is off: TestMain turns it on")
	}
	copied := openTemp(t)
	if got, want := dumpAll(t, copied), dumpAll(t, migrateTemp(t)); got != want {
		t.Errorf("a copied catalog holds\n%s\nwhere the migrations make\n%s", got, want)
	}
	fi, err := os.Stat(copied.Path())
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("a copied catalog's mode is %v, want 0600", fi.Mode().Perm())
	}
}

// TestSchema: the migrations make the schema schema.sql holds.
func TestSchema(t *testing.T) {
	got := dumpSchema(t, migrateTemp(t))
	if *update {
		if err := os.WriteFile(schemaFile, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the migrations make another schema than %s holds (go test ./internal/catalog -run TestSchema -update writes it anew; review its diff):\n%s",
			schemaFile, got)
	}
}

// TestStoreDoc: docs/store.md has a section for every table of the schema
// (schema.sql, which TestSchema holds to what the migrations make), whose
// tables of columns name every column, and no section for a table there
// is not.
func TestStoreDoc(t *testing.T) {
	doc, err := os.ReadFile("../../docs/store.md")
	if err != nil {
		t.Fatal(err)
	}
	_, catalog, ok := strings.Cut(string(doc), "\n## The catalog\n")
	if !ok {
		t.Fatal(`docs/store.md has no section "The catalog"`)
	}
	catalog, _, _ = strings.Cut(catalog, "\n## ")
	// sections: the text of each "### a, b" heading, by each table it names.
	sections := map[string]string{}
	for _, part := range strings.Split(catalog, "\n### ")[1:] {
		heading, text, _ := strings.Cut(part, "\n")
		for name := range strings.SplitSeq(heading, ",") {
			sections[strings.TrimSpace(name)] = text
		}
	}
	// A column is named by the first cell of a row of a table: "col",
	// "table.col", or a list of them ("day, offset, length").
	firstCell := regexp.MustCompile(`(?m)^\| *([^|]+?) *\|`)
	c := openTemp(t)
	rows, err := c.db.Query(`SELECT t.name, c.name FROM pragma_table_list t, pragma_table_info(t.name) c
		WHERE t.schema = 'main' AND t.type IN ('table', 'virtual') AND t.name NOT LIKE 'sqlite_%' ORDER BY t.name, c.cid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	tables := map[string]bool{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		text, ok := sections[table]
		if !tables[table] && !ok {
			t.Errorf("docs/store.md has no section for the table %s", table)
		}
		tables[table] = true
		if !ok {
			continue
		}
		named := false
		for _, m := range firstCell.FindAllStringSubmatch(text, -1) {
			for item := range strings.SplitSeq(m[1], ",") {
				item = strings.Trim(strings.TrimSpace(item), "`")
				named = named || item == col || item == table+"."+col
			}
		}
		if !named {
			t.Errorf("docs/store.md does not name the column %s.%s", table, col)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name := range sections {
		if !tables[name] {
			t.Errorf("docs/store.md has a section for %s, which is no table of the schema (%v)", name, slices.Sorted(maps.Keys(tables)))
		}
	}
}

// TestLoadMigrations: the migrations are the files of migrations/ in
// order, numbered from 1 without a gap, each step with its file.
func TestLoadMigrations(t *testing.T) {
	if len(migrations) < 11 || migrations[5].step == nil || migrations[5].name != "0006_pack_states" {
		t.Fatalf("%d migrations; the sixth %q, with a step: %v", len(migrations), migrations[5].name, migrations[5].step != nil)
	}
	for i, m := range migrations {
		if (m.step != nil) != (i+1 == 6 || i+1 == 15 || i+1 == 17) {
			t.Errorf("migration %s: step %v", m.name, m.step != nil)
		}
	}
	step := map[int]func(*Tx) error{2: packStates}
	for name, files := range map[string][]string{
		"ok":            {"0001_a.sql", "0002_b.sql"},
		"a gap":         {"0001_a.sql", "0003_b.sql"},
		"no name":       {"0001_a.sql", "0002.sql"},
		"three digits":  {"0001_a.sql", "002_b.sql"},
		"not from 1":    {"0002_a.sql", "0003_b.sql"},
		"step, no file": {"0001_a.sql"},
	} {
		fsys := fstest.MapFS{}
		for _, f := range files {
			fsys["migrations/"+f] = &fstest.MapFile{Data: []byte("SELECT 1;")}
		}
		m, err := loadMigrations(fsys, step)
		if ok := err == nil; ok != (name == "ok") || ok && (len(m) != 2 || m[1].step == nil || m[1].sql != "SELECT 1;") {
			t.Errorf("%s: %+v, %v", name, m, err)
		}
	}
}

// openAtVersion makes a catalog in a new store as a feedpipe of schema
// version n left it: the first n migrations, run as Open runs them. A
// test of a later migration writes rows of that version's tables into
// it (c.db), closes it, and opens its store with Open.
func openAtVersion(t *testing.T, n int) *Catalog {
	t.Helper()
	st, err := storedir.Open(filepath.Join(t.TempDir(), "store"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := connect(st, st.Path(File), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.migrate(ctx, n); err != nil {
		t.Fatal(err)
	}
	return c
}

// reopen closes c and opens its store's catalog with Open, which runs the
// migrations after c's version.
func reopen(t *testing.T, c *Catalog) *Catalog {
	t.Helper()
	c.Close()
	c, err := Open(ctx, c.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// storeOld stores es as a catalog of a version before migration 8 did: the
// lines in entries/ day, the rows of feeds, entries (numbered by feed) and
// entry_versions as migration 1 made them, without search keys.
func storeOld(t *testing.T, c *Catalog, day string, es ...*ndjson.Entry) {
	t.Helper()
	var lines []byte
	for _, e := range es {
		b, err := ndjson.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b...)
	}
	off, err := c.st.AppendLines("entries/"+day+".ndjson", lines, storedir.Durable)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := c.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, e := range es {
		length := int64(bytes.IndexByte(lines, '\n') + 1)
		lines = lines[length:]
		for _, q := range []string{
			`INSERT OR IGNORE INTO feeds (feed_id) VALUES (:feed)`,
			`INSERT INTO entries (id, feed_key, entry_uid, content_hash, versions, first_seen, last_seen, seen_count, published, day, offset, length)
				SELECT coalesce((SELECT max(id) FROM entries WHERE feed_key = f.key), f.key * :per) + 1,
					f.key, :uid, :hash, 1, :first, :last, 1, :published, :day, :offset, :length FROM feeds f WHERE f.feed_id = :feed`,
			`INSERT INTO entry_versions (entry_id, version, content_hash, stored_at, day, offset, length)
				SELECT e.id, 1, :hash, :last, :day, :offset, :length FROM entries e JOIN feeds f ON f.key = e.feed_key
				WHERE f.feed_id = :feed AND e.entry_uid = :uid`,
		} {
			if _, err := tx.Exec(q, sql.Named("feed", e.FeedID), sql.Named("per", int64(entriesPerFeed)), sql.Named("uid", e.EntryUID),
				sql.Named("hash", e.ContentHash), sql.Named("first", unixMS(e.FirstSeen.Time)), sql.Named("last", unixMS(e.LastSeen.Time)),
				sql.Named("published", unixMS(publishedOr(e))), sql.Named("day", day), sql.Named("offset", off),
				sql.Named("length", length)); err != nil {
				t.Fatal(err)
			}
		}
		off += length
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}
