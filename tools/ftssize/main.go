// Command ftssize measures what the catalog's full-text index costs per
// entry: it stores the entries of the feed fixtures (testdata/feeds and
// internal/parse/testdata/feeds, each -repeat times under other feed ids)
// in a new catalog, and prints the pages of each table (SQLite's dbstat)
// and the bytes per entry of the index and of the rest of the catalog.
// Run it from the repository's root: go run ./tools/ftssize
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/parse"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ftssize:", err)
		os.Exit(1)
	}
}

func run() error {
	repeat := flag.Int("repeat", 20, "store each fixture's entries this many times, under other feed ids")
	flag.Parse()
	dir, err := os.MkdirTemp("", "ftssize-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := storedir.Open(filepath.Join(dir, "store"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	cat, err := catalog.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	var files []string
	for _, g := range []string{"testdata/feeds/*", "internal/parse/testdata/feeds/*/*"} {
		m, _ := filepath.Glob(g)
		files = append(files, m...)
	}
	n, text := 0, 0
	for rep := range *repeat {
		for i, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			feed, err := parse.ParseFeed(b, parse.Source{FeedID: fmt.Sprintf("00000000-0000-5000-8000-%06d%06d", rep, i)})
			if err != nil {
				continue // LICENSE, SOURCE.txt, fixtures that are not feeds
			}
			err = cat.Update(ctx, func(t *catalog.Tx) error {
				for j := range feed.Entries {
					e := &feed.Entries[j]
					e.FirstSeen, e.LastSeen, e.SeenCount = e.Published, e.Published, 1
					if err := t.StoreVersion(e, catalog.Location{Day: "2026-11-21", Length: 1}); err != nil {
						return err
					}
					n++
					text += len(catalog.TextOf(e.Title)) + len(catalog.TextOf(e.Summary)) + len(catalog.TextOf(e.Content))
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	cat.Close()
	if n == 0 {
		return fmt.Errorf("no entries: run it from the repository's root")
	}
	db, err := sql.Open("sqlite", filepath.Join(dir, "store", catalog.File))
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return err
	}
	rows, err := db.Query(`SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC`)
	if err != nil {
		return err
	}
	defer rows.Close()
	fts, rest := 0, 0
	for rows.Next() {
		var name string
		var size int
		if err := rows.Scan(&name, &size); err != nil {
			return err
		}
		if strings.HasPrefix(name, "entries_fts") {
			fts += size
		} else {
			rest += size
		}
		fmt.Printf("%-28s %12d bytes\n", name, size)
	}
	fmt.Printf("%d entries, %d bytes of text each: the search index %d bytes per entry (%.0f%% of the text), the rest of the catalog %d\n",
		n, text/n, fts/n, 100*float64(fts)/float64(text), rest/n)
	return rows.Err()
}
