package ndjson

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// Records as the pipeline writes them, for the benchmarks: an entry of a
// news feed, with HTML content, as feed-store stores it; the fetch record
// that closes its group, as feed-dedup writes it; feed-store's event and
// decision.
const (
	benchEntry    = `{"type":"entry","v":1,"entry_uid":"ed9e3016acf11813","feed_id":"00db4779-2f50-5e6e-9967-ba9d63a54a19","native_id":"https://example.com/?p=7541","canonical_link":"https://example.com/2026/11/21/harbour-market-opens/","title":"Harbour market opens — “a new start” for the old docks","summary":"The market, shut since the flood, opens on Saturday with forty stalls &amp; a café.","content":"","authors":[{"name":"Jane Doe","email":"","uri":"https://example.com/author/jane"}],"categories":["Local","Business","Harbour"],"enclosures":[{"url":"https://example.com/wp-content/uploads/2026/11/market.jpg","type":"image/jpeg","length":183422}],"published":"2026-11-21T06:05:41Z","updated":"2026-11-21T07:12:03.5Z","content_hash":"09a4af1e111c7160","raw_ref":{"fetch_id":"01a1fe53-6e9c-7744-a7ad-06e894de5901","offset":325,"length":4517},"status":"new","first_seen":"2026-11-21T13:37:25.123Z","last_seen":"2026-11-21T13:37:25.123Z","seen_count":1}`
	benchFetch    = `{"type":"fetch","v":1,"fetch_id":"01a1fe53-6e9c-7744-a7ad-06e894de5901","due":{"type":"due","v":1,"feed_id":"00db4779-2f50-5e6e-9967-ba9d63a54a19","url":"http://127.1.30.176:43677/gen/7541.xml","source_type":"auto","name":"","labels":[],"scheduled_at":"2026-11-21T13:37:22.769Z","reason":"new","validators":{"etag":"","last_modified":""},"item_limit":20,"fulltext":false,"scrape":null,"user_agent":"","headers":null,"auth":null,"last":{"body_sha256":"","content_length":0,"moved_to":"","moved_count":0}},"requested_url":"http://127.1.30.176:43677/gen/7541.xml","url":"http://127.1.30.176:43677/gen/7541.xml","redirects":[],"fetched_at":"2026-11-21T13:37:23.1Z","duration_ms":23,"http_status":200,"not_modified":false,"request_headers":{"Accept":"application/rss+xml, application/atom+xml, application/feed+json, application/xml;q=0.9, text/xml;q=0.9, application/json;q=0.8, text/html;q=0.7, */*;q=0.5","Accept-Encoding":"gzip, deflate, br, zstd","User-Agent":"feedpipe/0.1.0 (+https://github.com/feedpipe/feedpipe)"},"response_headers":{"Content-Encoding":"gzip","Content-Length":"1095","Content-Type":"application/rss+xml; charset=utf-8","Date":"Sat, 21 Nov 2026 13:37:23 GMT","Etag":"\"gen-7541-0\"","Last-Modified":"Thu, 01 Jan 2026 11:05:41 GMT"},"body_ref":{"storage":"localfs","key":"raw/2026-11-21/c00d9851081ed10d66ae6ad5c37c338df9a2885acfeadf817e8ea9c8b51515e2.zst"},"body_sha256":"c00d9851081ed10d66ae6ad5c37c338df9a2885acfeadf817e8ea9c8b51515e2","content_type":"application/rss+xml; charset=utf-8","content_length":5530,"truncated":false,"unchanged":false,"bytes_saved":0,"retry_after_sec":0,"moved_to":"","moved_count":0,"new_url":"","error":null,"parse":{"format":"rss","version":"2.0","charset":"utf-8","title":"Generated feed 7541","link":"https://gen7541.example.com/","description":"Feed 7541 of the feedpipe test server, for tests and benchmarks.","language":"en","image":"","publisher":"Generated feed 7541","self":"","hubs":[],"prev_archive":"","next_archive":"","current":"","ttl_minutes":0,"skip_hours":[],"skip_days":[],"items":10,"entries":10,"newest_published":"2026-01-01T11:05:41Z","oldest_published":"2026-01-01T02:05:41Z","warnings":[],"error":""},"dedup":{"new":10,"updated":0,"unchanged":0,"aliases":0},"scrape":null,"page":null}`
	benchEvent    = `{"type":"new_entry","v":1,"entry_uid":"ed9e3016acf11813","feed_id":"00db4779-2f50-5e6e-9967-ba9d63a54a19","title":"Harbour market opens — “a new start” for the old docks","canonical_link":"https://example.com/2026/11/21/harbour-market-opens/","published":"2026-11-21T06:05:41Z","content_hash":"09a4af1e111c7160","raw_refs":[{"fetch_id":"01a1fe53-6e9c-7744-a7ad-06e894de5901","offset":325,"length":4517}],"ingested_at":"2026-11-21T13:37:25.123Z","stored_in":"entries/2026-11-21.ndjson"}`
	benchDecision = `{"type":"decision","v":1,"feed_id":"00db4779-2f50-5e6e-9967-ba9d63a54a19","fetch_id":"01a1fe53-6e9c-7744-a7ad-06e894de5901","decision":"defer","reason":"adaptive","at":"2026-11-21T13:37:25.123Z","next_at":"2026-11-21T14:41:02Z","until":null,"state":"active","event":"","disabled_reason":"","inputs":{"policy":"adaptive","override":"","outcome":"ok","http_status":200,"not_modified":false,"error_class":"","error_code":"","new_entries":10,"items":10,"interval_before_sec":0,"interval_after_sec":3817,"min_sec":300,"max_sec":86400,"ewma_secs":3600,"rate_per_day":24,"scale":1.0603,"base_sec":3600,"profile_factor":1,"window_cap_sec":0,"cron_next_at":"","cron_error":"","ttl_sec":0,"max_age_sec":0,"floor_sec":300,"retry_after_secs":0,"skip_hours":[],"skip_days":[],"skip_moved_from":null,"skip_ignored":false,"backoff_step":0,"backoff_sec":0,"jitter_sec":217,"consecutive_failures":0,"error_budget":0.35,"error_budget_size":5,"probe":false}}`
)

// benchRecord decodes line into a new T, with the entry's content made
// the size of a real article's.
func benchRecord[T any](b *testing.B, line string) *T {
	v := new(T)
	if err := json.Unmarshal([]byte(line), v); err != nil {
		b.Fatal(err)
	}
	if e, ok := any(v).(*Entry); ok {
		e.Content = strings.Repeat(`<p>The market, shut since the flood, opens on Saturday with forty stalls &amp; a café. “We waited two years,” said one trader.</p>`+"\n", 20)
	}
	return v
}

// oldMarshal is Marshal as it was before the encoder.
func oldMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

func benchMarshal(b *testing.B, v any) {
	want, _ := oldMarshal(v)
	if got, _ := Marshal(v); !bytes.Equal(got, want) {
		b.Fatalf("Marshal differs from encoding/json:\n%s%s", got, want)
	}
	for _, m := range []struct {
		name    string
		marshal func(any) ([]byte, error)
	}{{"encoding_json", oldMarshal}, {"ndjson", Marshal}} {
		b.Run(m.name, func(b *testing.B) {
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMarshalEntry(b *testing.B)    { benchMarshal(b, benchRecord[Entry](b, benchEntry)) }
func BenchmarkMarshalFetch(b *testing.B)    { benchMarshal(b, benchRecord[Fetch](b, benchFetch)) }
func BenchmarkMarshalEvent(b *testing.B)    { benchMarshal(b, benchRecord[Event](b, benchEvent)) }
func BenchmarkMarshalDecision(b *testing.B) { benchMarshal(b, benchRecord[Decision](b, benchDecision)) }

// BenchmarkWriterEntry is a stage writing entries to stdout: the Writer
// with its encoding/json Encoder, as it was, and as it is.
func BenchmarkWriterEntry(b *testing.B) {
	e := benchRecord[Entry](b, benchEntry)
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		w := NewWriter(io.Discard)
		for b.Loop() {
			w.buf.Reset()
			if err := w.enc.Encode(e); err != nil {
				b.Fatal(err)
			}
			w.emit(w.buf.Bytes())
		}
	})
	b.Run("ndjson", func(b *testing.B) {
		b.ReportAllocs()
		w := NewWriter(io.Discard)
		for b.Loop() {
			if err := w.Write(e); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkTimeMarshalJSON(b *testing.B) {
	t := At(time.Date(2026, 11, 21, 13, 37, 25, 123e6, time.UTC))
	b.Run("AppendFormat", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 32)
		for b.Loop() {
			buf = t.UTC().AppendFormat(append(buf[:0], '"'), TimeLayout)
			buf = append(buf, '"')
		}
	})
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 32)
		for b.Loop() {
			buf = t.appendJSON(buf[:0])
		}
	})
}
