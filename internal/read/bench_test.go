package read

import (
	"io"
	"os"
	"testing"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/storedir"
)

// BenchmarkFirstScreen times feed-read's first screen (50 entries on a
// terminal 120 columns wide), catalog opened and closed each time as a
// run of feed-read does, on the store FEEDPIPE_BENCH_STORE names (one
// tools/benchstore built: go run ./tools/benchstore -store DIR -feeds
// 10000 -entries 1000000). Its labels are bench and group0 to group9, its
// feeds "Bench feed N"; --grep needs the search index, which benchstore
// leaves empty (a catalog with meta fts:backfill = 0 fills it on its next
// open).
func BenchmarkFirstScreen(b *testing.B) {
	root := os.Getenv("FEEDPIPE_BENCH_STORE")
	if root == "" {
		b.Skip("FEEDPIPE_BENCH_STORE names no store")
	}
	st, err := storedir.Open(root)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"unread", Config{Unread: true}},
		{"starred", Config{Starred: true}},
		{"label", Config{Label: "group3"}},
		{"feed", Config{Feed: "Bench feed 42"}},
		{"grep-rare", Config{Grep: "9999"}},
		{"grep-1in100", Config{Grep: "post 42"}},
		{"grep-every", Config{Grep: "fetched"}},
		{"first-seen", Config{Order: catalog.OrderFirstSeen}},
		{"label-grep-every", Config{Label: "group3", Grep: "fetched"}},
		{"label-grep-1in100", Config{Label: "group3", Grep: "post 42"}},
		{"feed-grep-every", Config{Feed: "Bench feed 42", Grep: "fetched"}},
		{"feed-grep-1in100", Config{Feed: "Bench feed 42", Grep: "post 42"}},
		{"grep-every-unread", Config{Grep: "fetched", Unread: true}},
		{"first-seen-grep-1in100", Config{Order: catalog.OrderFirstSeen, Grep: "post 42"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := bc.cfg
			cfg.Out, cfg.Err, cfg.Store, cfg.Format, cfg.Width, cfg.Limit = io.Discard, io.Discard, st, Terminal, 120, 50
			for b.Loop() {
				if err := Run(ctx, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
