package serve

import (
	"context"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// changeTracker follows what commits change in the catalog, for the kept
// answers (cache.go). Each commit's row names the feeds it changed, or
// says it may have changed anything (catalog.Changes). The tracker counts
// the looks that found something a kept answer may depend on (gen). For
// each feed, it notes the gen of its last change. An answer made at gen g
// that depends on some feeds alone is still true while none of them, and
// nothing of unknown reach, changed after g. Any other answer is true
// while gen is still g.
//
// It looks when the catalog's files changed (their sizes and times), and
// once a second whatever they show, for a commit within the file system's
// time granularity that left them the same size: most requests cost two
// stats, and each commit one small query.
type changeTracker struct {
	cat *catalog.Catalog

	mu      sync.Mutex
	version string    // the catalog files' version at the last look
	looked  time.Time // when
	last    int64     // the catalog's last change seen
	gen     uint64
	allAt   uint64            // the gen of the last change of anything
	feedAt  map[string]uint64 // the gen of each feed's last change since allAt
}

// catalogVersion is the catalog's state as its files show it: their
// sizes and times.
func catalogVersion(cat *catalog.Catalog) string {
	var b []byte
	for _, suffix := range []string{"", "-wal"} {
		fi, err := os.Stat(cat.Path() + suffix)
		if err != nil {
			b = append(b, '-')
			continue
		}
		b = strconv.AppendInt(b, fi.Size(), 36)
		b = append(b, '.')
		b = strconv.AppendInt(b, fi.ModTime().UnixNano(), 36)
		b = append(b, ';')
	}
	return string(b)
}

// look brings the tracker up to the commits made so far, and returns its
// gen.
func (t *changeTracker) look(ctx context.Context) uint64 {
	v := catalogVersion(t.cat)
	t.mu.Lock()
	defer t.mu.Unlock()
	if v == t.version && time.Since(t.looked) < lookEvery {
		return t.gen
	}
	// The files' version before the rows are read: a commit after it
	// changes the files again, and the next look reads its row.
	t.version, t.looked = catalogVersion(t.cat), time.Now()
	ch, err := t.cat.Changes(context.WithoutCancel(ctx), t.last)
	if err != nil {
		// Nothing known: as if anything changed, and look again next time.
		t.version, ch = "", catalog.Changes{Last: t.last, All: true}
	}
	t.last = ch.Last
	switch {
	case ch.All:
		t.gen++
		t.allAt = t.gen
		clear(t.feedAt) // changes of anything after theirs
	case len(ch.Feeds) > 0:
		t.gen++
		if t.feedAt == nil {
			t.feedAt = map[string]uint64{}
		}
		for _, id := range ch.Feeds {
			t.feedAt[id] = t.gen
		}
	}
	return t.gen
}

// lookEvery is how long the tracker trusts the catalog files' version.
const lookEvery = time.Second

// unchanged reports whether an answer made at gen, of the feeds feeds
// alone when scoped, is still true as of the last look.
func (t *changeTracker) unchanged(gen uint64, scoped bool, feeds []string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !scoped {
		return t.gen == gen
	}
	if t.allAt > gen {
		return false
	}
	for _, id := range feeds {
		if t.feedAt[id] > gen {
			return false
		}
	}
	return true
}

// dependsOn tells the kept answer being made into w that it shows what
// the catalog and the store hold of the feeds ids alone (and nothing that
// depends on the time): commits that change other feeds leave it kept,
// up to contentMaxAge. An answer that does not say so is made anew after
// any change, and is kept cacheMaxAge at most.
func dependsOn(w any, ids ...string) {
	if b, ok := w.(*bufferedWriter); ok {
		b.scoped = true
		b.feeds = append(b.feeds, ids...)
	}
}
