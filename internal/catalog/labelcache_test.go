package catalog

import (
	"testing"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A label's feeds are kept while the subscriptions are unchanged, and
// follow every change, made by this catalog or by another process's.
func TestLabelFeedsKept(t *testing.T) {
	c := openTemp(t)
	add(t, c, sub("A", "news"), sub("B", "news"), sub("C"))
	other, err := Open(ctx, c.st, nil) // another process on the same store
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	count := func(label string) int {
		t.Helper()
		keys, err := c.labelFeeds(ctx, label)
		if err != nil {
			t.Fatal(err)
		}
		return len(keys)
	}
	if n := count("news"); n != 2 {
		t.Fatalf("news: %d feeds", n)
	}
	if n := count("news"); n != 2 { // kept
		t.Fatalf("news again: %d feeds", n)
	}
	relabel := func(cat *Catalog, name string, labels ...string) {
		t.Helper()
		err := cat.EditSubscriptions(ctx, func(list []ndjson.Subscription) ([]ndjson.Subscription, error) {
			for i := range list {
				if list[i].Name == name {
					list[i].Labels = labels
				}
			}
			return list, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	relabel(other, "C", "news")
	if n := count("news"); n != 3 {
		t.Errorf("after another process labelled C: %d feeds", n)
	}
	relabel(c, "A")
	if n := count("news"); n != 2 {
		t.Errorf("after A lost the label: %d feeds", n)
	}
	// The keys handed out are not the cache's to append to.
	keys, _ := c.labelFeeds(ctx, "news")
	_ = append(keys, int64(99))
	if again, _ := c.labelFeeds(ctx, "news"); len(again) != 2 || cap(again) != 2 {
		t.Errorf("kept keys %v (cap %d)", again, cap(again))
	}
}
