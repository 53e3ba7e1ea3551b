package bus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/feedpipe/feedpipe/internal/storedir"
)

func event(n int) string {
	return fmt.Sprintf(`{"type":"new_entry","v":1,"entry_uid":"%016x","feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8"}`, n)
}

// TestEventsLog: put --events-log puts the store's events log past its
// cursor, and moves the cursor in the same step as it acknowledges the
// records feed-store committed; the events on stdin are not put twice, a
// torn last line waits to be whole, and the first put starts at the end
// of the log as it is.
func TestEventsLog(t *testing.T) {
	f := newFixture(t)
	st, err := storedir.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(st.Root, "events", "2026-11-28.ndjson")
	appendLog := func(s string) {
		fh, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteString(s)
		fh.Close()
	}
	put := func(in string) {
		t.Helper()
		cfg := f.config(CmdPut, "events")
		cfg.In, cfg.Store, cfg.Put = strings.NewReader(in), st, PutOptions{EventsLog: true}
		if err := Run(context.Background(), cfg); err != nil {
			t.Fatalf("put: %v\n%s", err, f.logs)
		}
	}
	appendLog(event(1) + "\n" + event(2) + "\n") // history
	put("")
	if n := f.xlen("events"); n != 0 {
		t.Fatalf("the first put put %d events of the history", n)
	}
	// feed-store commits a group taken from parsed: its events in the log,
	// then on stdout, with the bus_ack take wrote after the group.
	f.xadd("parsed", map[string]any{"record": `{"type":"x","v":1}`}, map[string]any{"record": `{"type":"x","v":1}`})
	msgs, err := f.conn.Client.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "store", Consumer: "c", Streams: []string{f.conn.Key("parsed"), ">"}}).Result()
	if err != nil {
		if err := f.conn.Client.XGroupCreateMkStream(context.Background(), f.conn.Key("parsed"), "store", "0").Err(); err != nil {
			t.Fatal(err)
		}
		msgs, err = f.conn.Client.XReadGroup(context.Background(), &redis.XReadGroupArgs{Group: "store", Consumer: "c", Streams: []string{f.conn.Key("parsed"), ">"}}).Result()
		if err != nil {
			t.Fatal(err)
		}
	}
	ids := fmt.Sprintf(`"%s","%s"`, msgs[0].Messages[0].ID, msgs[0].Messages[1].ID)
	appendLog(event(3) + "\n" + event(4) + "\n" + event(5)) // the last line torn: still being written
	put(event(3) + "\n" + event(4) + "\n" + `{"type":"bus_ack","v":1,"stream":"parsed","group":"store","ids":[` + ids + `]}` + "\n")
	if got := f.records("events"); strings.Join(got, "\n") != event(3)+"\n"+event(4) {
		t.Errorf("events holds\n%s\nwant events 3 and 4", strings.Join(got, "\n"))
	}
	if g := f.group("parsed", "store"); g.Pending != 0 {
		t.Errorf("parsed/store has %d pending: the bus_ack was not acknowledged", g.Pending)
	}
	// The torn line completed, and an event feed-store announced at its
	// start: put at the end of the next put's input, once.
	appendLog("\n" + event(6) + "\n")
	put("")
	put("")
	if got := f.records("events"); len(got) != 4 || got[2] != event(5) || got[3] != event(6) {
		t.Errorf("events holds %q, want events 3 to 6, once each", got)
	}
	cur, _ := f.conn.Client.Get(context.Background(), f.conn.Key("cursor", "events")).Result()
	fi, _ := os.Stat(log)
	if cur != fmt.Sprintf("events/2026-11-28.ndjson %d", fi.Size()) {
		t.Errorf("cursor %q, want the log's end %d", cur, fi.Size())
	}
}
