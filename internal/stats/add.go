package stats

import (
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
)

// Add counts one feed into the totals at now, as Compute does, and
// returns its status: for a caller that passes over the feeds once for
// more figures than Compute's (feed-serve's metrics).
func (t *Totals) Add(f *catalog.Feed, now time.Time) Status {
	if t.Counts.ErrorCodes == nil {
		t.Counts.ErrorCodes = map[string]int{}
	}
	st := StatusOf(f.Sub, f.State, now)
	t.add(f, st)
	return st
}
