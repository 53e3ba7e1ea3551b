package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/feedwrite"
)

// PublishConfig is what feed-serve publish needs.
type PublishConfig struct {
	Catalog *catalog.Catalog
	Dir     string // where the files go; made if missing
	// BaseURL is the URL Dir is served at ("https://example.org/feeds"),
	// for each feed's self link; "" writes none.
	BaseURL string
	Hub     string // WebSub hub the feeds name; "" none
	Limit   int    // entries per feed; 0: FeedLimit
	Msg     io.Writer
	// MediaURL is where the stored media are served (feed-serve's /media,
	// or a web server's): an enclosure whose file is stored points there;
	// "": at the publisher's.
	MediaURL string
}

// PublishSummary counts what Publish did.
type PublishSummary struct {
	Written, Unchanged, Empty int
	Skipped                   []string // labels that cannot be file names
}

// extensions are the files of one feed: RSS as {label}.xml, the name
// static feed hosts expect (docs/design.md#meta-feeds), Atom and JSON
// Feed beside it.
var extensions = []struct{ ext, format string }{{".xml", feedwrite.RSS}, {".atom", feedwrite.Atom}, {".json", feedwrite.JSON}}

// Publish writes the feeds of every label, and of all entries, to files in
// cfg.Dir: LABEL.xml (RSS 2.0), LABEL.atom and LABEL.json, and all.*. Each
// is written atomically (a temporary file, synced, renamed over the old),
// and only when its content changed; a label without entries gets none.
// A label that cannot be a file name (a slash, a leading dot, "all") is
// skipped and named.
func Publish(ctx context.Context, cfg PublishConfig) (PublishSummary, error) {
	var sum PublishSummary
	if cfg.Limit <= 0 {
		cfg.Limit = FeedLimit
	}
	if cfg.Msg == nil {
		cfg.Msg = io.Discard
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return sum, fmt.Errorf("publish: %w", err)
	}
	labels := map[string]bool{}
	err := cfg.Catalog.Feeds(ctx, catalog.FeedFilter{}, func(f *catalog.Feed) error {
		for _, l := range f.Sub.Labels {
			labels[l] = true
		}
		return nil
	})
	if err != nil {
		return sum, err
	}
	names := []string{"all"}
	colls := map[string]collection{"all": allCollection(cfg.Catalog)}
	for _, l := range slices.Sorted(func(yield func(string) bool) {
		for l := range labels {
			if !yield(l) {
				return
			}
		}
	}) {
		if labelProblem(l) != "" || l == "all" {
			sum.Skipped = append(sum.Skipped, l)
			fmt.Fprintf(cfg.Msg, "feed-serve: publish: label %q is not written: it cannot be a file name of its own (a slash, a leading dot, a control character, or \"all\")\n", l)
			continue
		}
		names = append(names, l)
		colls[l] = labelCollection(cfg.Catalog, l)
	}
	for _, name := range names {
		var self string
		if cfg.BaseURL != "" {
			self = strings.TrimRight(cfg.BaseURL, "/") + "/" + url.PathEscape(name) // a label's spaces and '#'s
		}
		f, _, err := buildFeed(ctx, cfg.Catalog.Entry, colls[name], catalog.EntryQuery{Limit: cfg.Limit}, "")
		if err == nil {
			err = pointEnclosures(ctx, cfg.Catalog, f, cfg.MediaURL)
		}
		if err != nil {
			return sum, err
		}
		if len(f.Entries) == 0 {
			sum.Empty++
			continue
		}
		f.Hub = cfg.Hub
		for _, x := range extensions {
			if self != "" {
				f.Self = self + x.ext
			}
			var b bytes.Buffer
			if err := feedwrite.Write(&b, x.format, f); err != nil {
				return sum, err
			}
			changed, err := writeIfChanged(filepath.Join(cfg.Dir, name+x.ext), b.Bytes())
			if err != nil {
				return sum, err
			}
			if changed {
				sum.Written++
			} else {
				sum.Unchanged++
			}
		}
	}
	return sum, nil
}

// writeIfChanged writes data to path atomically unless the file holds it
// already; it reports whether it wrote.
func writeIfChanged(path string, data []byte) (bool, error) {
	old, err := os.ReadFile(path)
	if err == nil && bytes.Equal(old, data) {
		return false, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("publish: %w", err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return false, fmt.Errorf("publish: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return false, fmt.Errorf("publish: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return false, fmt.Errorf("publish: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return false, fmt.Errorf("publish: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return false, fmt.Errorf("publish: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return false, fmt.Errorf("publish: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return true, nil
}
