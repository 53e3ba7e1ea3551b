package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/serve"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// slowWriter passes at most rate bytes a second through to w.
type slowWriter struct {
	w    http.ResponseWriter
	rate int
}

func (s slowWriter) Header() http.Header  { return s.w.Header() }
func (s slowWriter) WriteHeader(code int) { s.w.WriteHeader(code) }

func (s slowWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), s.rate/20)
		m, err := s.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		s.w.(http.Flusher).Flush()
		p = p[k:]
		time.Sleep(50 * time.Millisecond)
	}
	return n, nil
}

// TestMediaKilledMidDownload kills feed-media run with SIGKILL while it
// downloads an episode slowly: nothing half-written is ever stored or
// served, and the next run resumes from what the killed one had synced,
// with a Range request the server sees checked by If-Range.
func TestMediaKilledMidDownload(t *testing.T) {
	sourcesRead(t)
	if testing.Short() {
		t.Skip("-short")
	}
	episode := make([]byte, 6<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range episode {
		episode[i] = byte(r.Uint32())
	}
	copy(episode, "ID3\x04\x00")
	d := sha256.Sum256(episode)
	sum := hex.EncodeToString(d[:])

	var mu sync.Mutex
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/pod.xml":
			fmt.Fprintf(w, `<?xml version="1.0"?><rss version="2.0"><channel><title>Pod</title>
<item><guid>ep1</guid><title>One</title><enclosure url="/ep1.mp3" type="audio/mpeg" length="%d"/></item></channel></rss>`, len(episode))
		case "/ep1.mp3":
			mu.Lock()
			asked = append(asked, r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
			mu.Unlock()
			w.Header().Set("ETag", `"ep1-v1"`)
			w.Header().Set("Content-Type", "audio/mpeg")
			// 2 MiB a second: the download takes 3 s, and syncs on the way.
			http.ServeContent(slowWriter{w, 2 << 20}, r, "", time.Time{}, bytes.NewReader(episode))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	env := append(os.Environ(), "FEEDPIPE_STORE="+store, "FEEDPIPE_ALLOW_PRIVATE=1", "FEEDPIPE_HOST_RPS=0", "FEEDPIPE_LOG_LEVEL=error")
	if out, err := command(env, "feed-sub", "add", srv.URL+"/pod.xml", "--media", "audio/*").CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var events bytes.Buffer
	for i, c := range pipeline(t, env, &events, nil, []string{"feed-due"}, []string{"feed-fetch"}, []string{"feed-parse"},
		[]string{"feed-dedup"}, []string{"feed-store"}, []string{"feed-media"}) {
		if err := c.Wait(); err != nil {
			t.Fatalf("stage %d: %v", i, err)
		}
	}
	if !strings.Contains(events.String(), `"type":"new_entry"`) {
		t.Fatalf("no event: %s", events.String())
	}
	st, cat := mustStore(t, store), mustCatalog(t, store)
	defer cat.Close()
	held := func() int64 {
		jobs, err := cat.DueMedia(context.Background(), time.Now().Add(time.Hour), 10, nil)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("queue %+v, %v", jobs, err)
		}
		return jobs[0].PartialBytes
	}
	api, err := serve.New(serve.Config{Store: st, Catalog: cat, NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	getMedia := func() (int, []byte) {
		rec := httptest.NewRecorder()
		api.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1/media/"+sum, nil))
		return rec.Code, rec.Body.Bytes()
	}

	// The first run, killed once it has synced some of the file.
	run := command(env, "feed-media", "run", "--disk-floor", "0")
	var out bytes.Buffer
	run.Stdout = &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for held() == 0 {
		if time.Now().After(deadline) {
			run.Process.Kill()
			t.Fatal("no bytes synced in 20 s")
		}
		// Meanwhile, nothing is served.
		if code, _ := getMedia(); code != http.StatusNotFound {
			t.Fatalf("GET /media during the download: %d", code)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := run.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the run ended before the kill: %v (%s)", err, out.String())
	}
	kept := held()
	if kept <= 0 || kept >= int64(len(episode)) {
		t.Fatalf("held %d of %d", kept, len(episode))
	}
	files, err := st.MediaFiles()
	if err != nil || len(files) != 0 {
		t.Fatalf("a file is stored after the kill: %+v, %v", files, err)
	}
	if code, _ := getMedia(); code != http.StatusNotFound {
		t.Fatalf("GET /media after the kill: %d", code)
	}
	if strings.Contains(out.String(), `"status":"stored"`) {
		t.Fatalf("a record says stored: %s", out.String())
	}

	// The next run resumes from what was synced.
	next := command(env, "feed-media", "run", "--disk-floor", "0")
	b, err := next.Output()
	if err != nil {
		t.Fatalf("the next run: %v: %s", err, b)
	}
	var m ndjson.Media
	if err := ndjson.Unmarshal(bytes.TrimSpace(b), &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if m.Status != ndjson.MediaStored || m.ResumedFrom != kept || m.Restarted || m.SHA256 != sum || m.Attempt != 1 {
		t.Fatalf("the next run: %+v", m)
	}
	mu.Lock()
	got := append([]string(nil), asked...)
	mu.Unlock()
	if len(got) != 2 || got[0] != "|" || got[1] != fmt.Sprintf(`bytes=%d-|"ep1-v1"`, kept) {
		t.Fatalf("the server was asked %q", got)
	}
	code, body := getMedia()
	if code != http.StatusOK || !bytes.Equal(body, episode) {
		t.Fatalf("GET /media: %d, %d bytes", code, len(body))
	}
	f, err := st.OpenMedia(sum)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stored, _ := io.ReadAll(f)
	if !bytes.Equal(stored, episode) {
		t.Fatal("the stored file is not the episode")
	}
	if ids, _ := st.Partials(); len(ids) != 0 {
		t.Fatalf("partials left: %v", ids)
	}

}
