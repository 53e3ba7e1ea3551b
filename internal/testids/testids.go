// Package testids gives tests ids of the shapes the store checks (feed and
// fetch ids are UUIDs, entry uids 16 hex digits) made from short, readable
// names, and turns them back into those names for comparisons.
package testids

import (
	"fmt"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/google/uuid"
)

var (
	mu    sync.Mutex
	names = map[string]string{} // id -> the name it was made from
)

func remember(id, name string) string {
	mu.Lock()
	names[id] = name
	mu.Unlock()
	return id
}

// Feed is the feed id of the test feed called name.
func Feed(name string) string {
	return remember(uuid.NewSHA1(uuid.NameSpaceURL, []byte("feedpipe-test-feed:"+name)).String(), name)
}

// Fetch is the fetch id of the test fetch called name.
func Fetch(name string) string {
	return remember(uuid.NewSHA1(uuid.NameSpaceURL, []byte("feedpipe-test-fetch:"+name)).String(), name)
}

// UID is the entry uid of the test entry called name.
func UID(name string) string {
	return remember(fmt.Sprintf("%016x", xxhash.Sum64String("feedpipe-test-entry:"+name)), name)
}

// Name is the name an id of this package was made from; any other string
// is returned as it is.
func Name(id string) string {
	mu.Lock()
	defer mu.Unlock()
	if n, ok := names[id]; ok {
		return n
	}
	return id
}
