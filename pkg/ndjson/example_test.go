package ndjson_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// A stage reads records, consumes the types it knows, passes the others on
// unchanged, and reports bad lines without stopping.
func Example() {
	in := strings.NewReader(`{"type":"entry","v":1,"entry_uid":"9f86d081884c7d65","feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","content_hash":"60303ae22b998861","title":"Hello"}
{"type":"entry","v":1,"entry_uid":"9f86d081884c7d65","feed_id":"../../x","content_hash":"60303ae22b998861","title":"Escape"}
not json
{"type":"something_else","v":1}
`)
	r := ndjson.NewReader(in)
	w := ndjson.NewWriter(os.Stdout)
	defer w.Flush()
	for {
		line, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintln(os.Stdout, "skipped:", err)
			continue
		}
		if line.Type != ndjson.TypeEntry {
			w.WriteRaw(line.Raw)
			continue
		}
		var e ndjson.Entry
		if err := line.Decode(&e); err != nil {
			fmt.Fprintln(os.Stdout, "skipped:", err) // a field with the wrong shape
			continue
		}
		w.Flush()
		fmt.Println("entry:", e.Title)
	}
	// Output:
	// entry: Hello
	// skipped: line 2: entry record: field feed_id is "../../x": it must be a feed id (a UUID in lower case)
	// skipped: line 3: invalid JSON: invalid character 'o' in literal null (expecting 'u'); the line begins "not json"
	// {"type":"something_else","v":1}
}
