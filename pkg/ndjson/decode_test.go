package ndjson

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeSeeds are lines of every record type plus the cases where
// encoding/json's rules are easy to get wrong: case-insensitive names,
// repeated names, invalid UTF-8, null into a value, numbers out of range.
var decodeSeeds = []string{
	`{"type":"entry","v":1,"entry_uid":"a","title":"T","authors":[{"name":"N"}],"categories":["x"],"published":"2026-01-02T03:04:05Z","raw_ref":{"fetch_id":"f","offset":3,"length":4},"seen_count":2}`,
	`{"type":"fetch","v":1,"due":{"feed_id":"f","url":"http://a/","validators":{"etag":"\"e\""}},"http_status":200,"response_headers":{"Etag":"x"},"redirects":[{"status":301,"url":"http://b/"}],"error":null}`,
	`{"type":"due","v":1,"feed_id":"f","labels":["a","b"],"scheduled_at":null,"item_limit":20}`,
	`{"TYPE":"entry","Title":"case","ENTRY_UID":"u"}`,
	`{"title":"one","title":"two","authors":[],"categories":null}`,
	"{\"title\":\"bad \xff utf8\",\"summary\":\"\\ud800 lone surrogate\"}",
	`{"seen_count":1e400}`,
	`{"seen_count":1.5}`,
	`{"seen_count":"3"}`,
	`{"published":"not a time"}`,
	`{"published":""}`,
	`{"raw_ref":null,"authors":null}`,
	`{"title":"x"} trailing`,
	`[1,2]`,
	``,
}

// FuzzUnmarshal checks Unmarshal against encoding/json on any input: both
// accept it or both refuse it, with the same value, for each record type.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := valid(data), json.Valid(data); got != want {
			t.Fatalf("valid(%q) = %v, encoding/json says %v", data, got, want)
		}
		for _, newRec := range []func() any{
			func() any { return new(Entry) },
			func() any { return new(Fetch) },
			func() any { return new(Due) },
			func() any { return new(map[string]any) },
		} {
			got, want := newRec(), newRec()
			gotErr, wantErr := Unmarshal(data, got), json.Unmarshal(data, want)
			if (gotErr == nil) != (wantErr == nil) {
				t.Fatalf("%T from %q: error %v, encoding/json's %v", got, data, gotErr, wantErr)
			}
			if wantErr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%T from %q:\n got %+v\nwant %+v", got, data, got, want)
			}
		}
	})
}
