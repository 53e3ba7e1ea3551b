package catalog

import (
	"fmt"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// BenchmarkStoreVersion times Tx.StoreVersion of new entries with text, as
// feed-store stores a cold cycle's: 100 feeds, 500 entries a transaction,
// published a second apart.
func BenchmarkStoreVersion(b *testing.B) {
	c := openTemp(b)
	const perTx = 500
	n := 0
	entries := func() []*ndjson.Entry {
		es := make([]*ndjson.Entry, perTx)
		for i := range es {
			at := t0.Add(time.Duration(n) * time.Second)
			e := textEntry(fmt.Sprint("F", n%100), fmt.Sprint("e", n), "h", at,
				fmt.Sprintf("Post %d of the feed", n), "A summary of <b>the</b> post", "<p>Some words of the post's content, and a <a href=\"x\">link</a>.</p>")
			es[i] = e
			n++
		}
		return es
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += perTx {
		es := entries()
		if err := c.Update(ctx, func(t *Tx) error {
			for j, e := range es {
				if err := t.StoreVersion(e, Location{Day: "2026-11-20", Offset: int64(n*1000 + j), Length: 500}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}
