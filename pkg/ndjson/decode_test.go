package ndjson

import (
	"encoding/json"
	"reflect"
	"testing"

	json1 "github.com/go-json-experiment/json/v1"
)

// decodeSeeds are lines of every record type plus the cases where
// encoding/json's rules are easy to get wrong: case-insensitive names,
// repeated names, invalid UTF-8, null into a value, numbers out of range.
var decodeSeeds = []string{
	`{"type":"entry","v":1,"entry_uid":"a","title":"T","authors":[{"name":"N"}],"categories":["x"],"published":"2026-01-02T03:04:05Z","raw_ref":{"fetch_id":"f","offset":3,"length":4},"seen_count":2}`,
	`{"type":"fetch","v":1,"due":{"feed_id":"f","url":"http://a/","validators":{"etag":"\"e\""}},"http_status":200,"response_headers":{"Etag":"x"},"redirects":[{"status":301,"url":"http://b/"}],"error":null}`,
	`{"type":"due","v":1,"feed_id":"f","labels":["a","b"],"scheduled_at":null,"item_limit":20}`,
	// Lines as the pipeline writes them (scripts/bench-stages' cycle): a
	// 304's fetch record, an entry, a new_entry event.
	`{"type":"fetch","v":1,"fetch_id":"01a22626-cddf-77e4-b2a8-055a6d7a1f67","due":{"type":"due","v":1,"feed_id":"003ba814-a18a-5a32-8747-210becbf8ffb","url":"http://127.1.2.231:42925/gen/484.xml","source_type":"auto","name":"","labels":[],"scheduled_at":"2026-11-29T07:13:26.948Z","reason":"forced","validators":{"etag":"\"gen-484-0\"","last_modified":"Thu, 01 Jan 2026 09:08:04 GMT"},"item_limit":0,"fulltext":false,"scrape":null,"user_agent":"","headers":null,"auth":null,"allow_private":false,"last":{"body_sha256":"bfb8ae00de8accf007532780da5760fa8bc94a275e66a90a3b8ff32943d28421","content_length":5468,"moved_to":"","moved_count":0}},"requested_url":"http://127.1.2.231:42925/gen/484.xml","url":"http://127.1.2.231:42925/gen/484.xml","redirects":[],"fetched_at":"2026-11-29T07:13:27.007Z","duration_ms":1,"http_status":304,"not_modified":true,"request_headers":{"Accept":"application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, text/html;q=0.7, */*;q=0.5","Accept-Encoding":"gzip, deflate, br, zstd","If-Modified-Since":"Thu, 01 Jan 2026 09:08:04 GMT","If-None-Match":"\"gen-484-0\"","User-Agent":"feedpipe/0.1.0 (+https://github.com/feedpipe/feedpipe)"},"response_headers":{"Date":"Sun, 29 Nov 2026 07:13:27 GMT","Etag":"\"gen-484-0\"","Last-Modified":"Thu, 01 Jan 2026 09:08:04 GMT"},"body_ref":null,"body_sha256":"","content_type":"","content_length":0,"truncated":false,"unchanged":false,"bytes_saved":5468,"retry_after_sec":0,"moved_to":"","moved_count":0,"new_url":"","error":null,"parse":null,"dedup":null,"scrape":null,"page":null}`,
	`{"type":"entry","v":1,"entry_uid":"e2ceaabf5a4bb0f9","feed_id":"00a892a5-d947-51ab-ad52-2544c7edcfb9","native_id":"gen-3-9","canonical_link":"https://gen3.example.com/posts/9.html","title":"Feed 3, post 9: window zulu engine lantern river","summary":"foxtrot engine foxtrot market engine copper bravo lantern xray signal stone kilo echo letter delta market kilo delta lantern harbour papa garden engine charlie whiskey letter sierra copper kilo zulu india harbour whiskey juliet oscar sierra november charlie lantern victor","content":"","authors":[],"categories":[],"enclosures":[],"published":"2026-01-01T09:00:03Z","updated":null,"content_hash":"d267476463a98e48","raw_ref":{"fetch_id":"01a22626-c1ed-73e9-ac11-02f3086ade4b","offset":316,"length":521},"status":"new","first_seen":null,"last_seen":null,"seen_count":0}`,
	`{"type":"new_entry","v":1,"entry_uid":"e2ceaabf5a4bb0f9","feed_id":"00a892a5-d947-51ab-ad52-2544c7edcfb9","feed_name":"Generated feed 3","labels":[],"title":"Feed 3, post 9: window zulu engine lantern river","summary":"foxtrot engine foxtrot market engine copper bravo lantern xray signal stone kilo echo letter delta market kilo delta lantern harbour papa garden engine charlie whiskey letter sierra copper kilo zulu india harbour whiskey juliet oscar sierra november charlie lantern victor","canonical_link":"https://gen3.example.com/posts/9.html","published":"2026-01-01T09:00:03Z","content_hash":"d267476463a98e48","raw_refs":[{"fetch_id":"01a22626-c1ed-73e9-ac11-02f3086ade4b","offset":316,"length":521}],"ingested_at":"2026-11-29T18:05:37.912Z","stored_in":"entries/2026-11-29.ndjson"}`,
	`{"type":"subscription","v":1,"feed_id":"f","url":"http://a/","labels":["x"],"headers":{"X-A":"1"},"auth":{"user":"u"},"paused_until":null,"scrape":{"list":{"item":"li"}}}`,
	`{"type":"decision","v":1,"feed_id":"f","at":"2026-01-02T03:04:05.678Z","inputs":{"rate_n":1.5},"next_at":"2026-01-02T04:04:05Z"}`,
	`{"type":"entry","authors":[{"name":"a","NAME":"b"}],"enclosures":[{"url":"u","length":-1}],"raw_ref":{"offset":9223372036854775807}}`,
	`{"type":"fetch","request_headers":{"A":"1","A":"2"},"response_headers":null,"redirects":null,"body_ref":{"sha256":"x"},"parse":{"warnings":["w"]}}`,
	`{"type":"entry","title":"\u00e9\n\t\"\\\/","summary":"\uD83D\uDE00"}`,
	`{"type":"entry","seen_count":-0,"published":"2026-01-02T03:04:05+01:00"}`,
	`{"type":"entry","seen_count":9223372036854775808}`,
	`{"type":"entry","title":null,"authors":{}}`,
	` {"type" : "entry" , "title" : "spaced" } `,
	`{"type":"due","scrape":null}`,
	`{"type":"due","scrape": [1, {"a" : null}] ,"headers":{"A":"1"}}`,
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
// Unmarshal returns goccy/go-json's value whenever it accepts the input,
// so that decoder is what this checks: accepting nothing encoding/json
// refuses, and reading the same value from the rest.
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
			func() any { return new(Event) },
			func() any { return new(Subscription) },
			func() any { return new(Decision) },
			func() any { return new(map[string]any) },
			func() any { return new(any) },
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

// TestUnmarshalErrors: a record Unmarshal refuses is refused with the
// reference decoder's words, which name the field and the type, as
// encoding/json's do; the fast decoder's are never shown.
func TestUnmarshalErrors(t *testing.T) {
	for _, in := range []string{
		`{"seen_count":"3"}`,
		`{"seen_count":1e400}`,
		`{"published":"not a time"}`,
		`{"title":"x"} trailing`,
		`{"title":`,
		`[1,2]`,
	} {
		var got, want Entry
		gotErr := Unmarshal([]byte(in), &got)
		wantErr := json1.Unmarshal([]byte(in), &want)
		if gotErr == nil || wantErr == nil || gotErr.Error() != wantErr.Error() {
			t.Errorf("%s: error %v, want %v", in, gotErr, wantErr)
		}
	}
}

// BenchmarkUnmarshal decodes a 304's fetch record and an entry line as the
// pipeline writes them (decodeSeeds) with Unmarshal and with the
// reference decoder alone.
func BenchmarkUnmarshal(b *testing.B) {
	lines := map[string][]byte{}
	for _, s := range decodeSeeds {
		if len(s) > 1000 && s[:16] == `{"type":"fetch",` {
			lines["fetch"] = []byte(s)
		}
		if len(s) > 500 && s[:16] == `{"type":"entry",` {
			lines["entry"] = []byte(s)
		}
	}
	for _, rec := range []string{"fetch", "entry"} {
		for name, decode := range map[string]func([]byte, any) error{"Unmarshal": Unmarshal, "reference": json1.Unmarshal} {
			b.Run(rec+"/"+name, func(b *testing.B) {
				b.SetBytes(int64(len(lines[rec])))
				for b.Loop() {
					var err error
					if rec == "fetch" {
						err = decode(lines[rec], new(Fetch))
					} else {
						err = decode(lines[rec], new(Entry))
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
