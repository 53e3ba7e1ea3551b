package serve

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/storedir"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

type sse struct{ id, event, data string }

// readEvents reads n events of a Server-Sent Events stream, skipping
// comments, within a deadline.
func readEvents(t *testing.T, rd *bufio.Reader, n int) []sse {
	t.Helper()
	var out []sse
	var cur sse
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(out) < n {
			line, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if cur.data != "" {
					out = append(out, cur)
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("read %d of %d events", len(out), n)
	}
	if len(out) < n {
		t.Fatalf("the stream ended after %d of %d events", len(out), n)
	}
	return out
}

func (w *world) stream(t *testing.T, query string, header ...string) (*bufio.Reader, func()) {
	t.Helper()
	req, _ := http.NewRequest("GET", w.api.URL+"/events/stream"+query, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
	}
	return bufio.NewReader(resp.Body), func() { resp.Body.Close() }
}

// newEntries makes the TechCrunch feed publish n more items.
func (w *world) newEntries(n int, tag string) {
	var items strings.Builder
	for i := range n {
		items.WriteString("<item><title>" + tag + " " + string(rune('a'+i)) + "</title><guid>" + tag + string(rune('a'+i)) + "</guid><link>https://techcrunch.com/" + tag + string(rune('a'+i)) + "</link></item>")
	}
	os.WriteFile(filepath.Join(w.www, "TechCrunch.xml"), []byte(strings.Replace(string(mustRead(w.t, "TechCrunch.xml")), "<item>", items.String()+"<item>", 1)), 0o644)
}

// TestEventStream: the stream sends what feed-store writes as it writes
// it, from now on; Last-Event-ID resumes it exactly after an event.
func TestEventStream(t *testing.T) {
	w := newWorld(t)
	rd, stop := w.stream(t, "")
	defer stop()
	w.newEntries(3, "first")
	w.cycle(t0.Add(time.Hour))
	got := readEvents(t, rd, 3)
	for _, e := range got {
		var ev ndjson.Event
		if e.event != "new_entry" || json.Unmarshal([]byte(e.data), &ev) != nil || !strings.HasPrefix(ev.Title, "first ") {
			t.Fatalf("event %+v", e)
		}
		if _, _, ok := ParseEventID(e.id); !ok {
			t.Fatalf("id %q", e.id)
		}
	}
	// Resume after the first: the second and third, then what comes.
	rd2, stop2 := w.stream(t, "", "Last-Event-ID", got[0].id)
	defer stop2()
	again := readEvents(t, rd2, 2)
	if again[0] != got[1] || again[1] != got[2] {
		t.Fatalf("resumed with %+v, want %+v", again, got[1:])
	}
	w.newEntries(1, "second")
	w.cycle(t0.Add(2 * time.Hour))
	if e := readEvents(t, rd2, 1)[0]; !strings.Contains(e.data, `"second a"`) {
		t.Fatalf("after resuming: %+v", e)
	}
	// The query parameter does what the header does.
	rd3, stop3 := w.stream(t, "?last_event_id="+got[1].id)
	defer stop3()
	if e := readEvents(t, rd3, 1)[0]; e != got[2] {
		t.Fatalf("last_event_id: %+v", e)
	}
	// A quiet stream sends comments to keep the connection.
	line, err := rd3.ReadString('\n')
	for err == nil && !strings.HasPrefix(line, ":") {
		line, err = rd3.ReadString('\n')
	}
	if err != nil {
		t.Fatalf("no keep-alive: %v", err)
	}
}

// TestEventsList: /events pages through events/ oldest first; since
// starts at a time; the cursor of each page goes on after it.
func TestEventsList(t *testing.T) {
	w := newWorld(t)
	total := 0
	w.st.ReadLogsSince(storedir.DirEvents, "", 0, func(string, ndjson.Line) error { total++; return nil })
	type page struct {
		Events []map[string]any `json:"events"`
		LastID string           `json:"last_id"`
		Next   string           `json:"next"`
	}
	var ids []string
	next := "/events?limit=10"
	for {
		var p page
		r := w.get(next)
		r.json(t, &p)
		for _, e := range p.Events {
			ids = append(ids, e["id"].(string))
			if e["type"] != "new_entry" || e["entry_uid"] == "" {
				t.Fatalf("event %v", e)
			}
		}
		if len(p.Events) < 10 {
			break
		}
		next = p.Next
	}
	if len(ids) != total || total < 10 {
		t.Fatalf("%d events listed, %d in events/", len(ids), total)
	}
	// Since a time after them all: none; then a new cycle's.
	var p page
	w.get("/events?since="+t0.Add(time.Minute).Format(time.RFC3339)).json(t, &p)
	if len(p.Events) != 0 {
		t.Fatalf("since after: %d", len(p.Events))
	}
	w.newEntries(2, "later")
	w.cycle(t0.Add(time.Hour))
	w.get("/events?since="+t0.Add(time.Minute).Format(time.RFC3339)).json(t, &p)
	if len(p.Events) != 2 {
		t.Fatalf("since: %d events", len(p.Events))
	}
	w.get("/events?cursor="+ids[len(ids)-1]).json(t, &p)
	if len(p.Events) != 2 || p.Events[0]["title"] != "later a" {
		t.Fatalf("after the cursor: %v", p.Events)
	}
}

func FuzzEventID(f *testing.F) {
	for _, s := range []string{"2026-11-21:0", "2026-11-21:18230", "2026-02-30:1", "../x:1", "2026-11-21:-1", "2026-11-21:99999999999999999999", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		key, off, ok := ParseEventID(s)
		if !ok {
			return
		}
		if !ndjson.IsDayFile(key, storedir.DirEvents) || off < 0 {
			t.Fatalf("%q: key %q, offset %d", s, key, off)
		}
		if again := EventID(key, off); again != s {
			t.Fatalf("%q reads back as %q", s, again)
		}
	})
}
