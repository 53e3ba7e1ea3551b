package pipe

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestEachReportsBadLinesAndGoesOn(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	var f Failures
	var types []string
	in := "{\"type\":\"a\"}\nnot json\n{\"type\":\"b\"}\n[1]\n{\"type\":\"c\"}\n"
	err := Each(context.Background(), strings.NewReader(in), log, &f, func(l ndjson.Line) error {
		types = append(types, l.Type)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(types, ",") != "a,b,c" || f.BadLines != 2 {
		t.Fatalf("types %v, bad lines %d", types, f.BadLines)
	}
	for _, want := range []string{"line=2", "line=4", "invalid JSON", "not a JSON object"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

func TestEachStopsOnHandlerErrorAndCancel(t *testing.T) {
	var f Failures
	boom := errors.New("boom")
	n := 0
	err := Each(context.Background(), strings.NewReader("{}\n{}\n{}\n"), slog.New(slog.DiscardHandler), &f, func(ndjson.Line) error {
		n++
		if n == 2 {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) || n != 2 {
		t.Fatalf("err %v after %d lines", err, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n = 0
	err = Each(ctx, strings.NewReader("{}\n{}\n{}\n"), slog.New(slog.DiscardHandler), &f, func(ndjson.Line) error {
		n++
		cancel()
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("after cancel: err %v, %d lines handled; want nil, 1", err, n)
	}
}

func TestFailuresErr(t *testing.T) {
	for _, tc := range []struct {
		f    Failures
		want string
	}{
		{Failures{}, ""},
		{Failures{Records: 1}, "1 feed failed (each reported above)"},
		{Failures{Records: 3}, "3 feeds failed (each reported above)"},
		{Failures{BadLines: 1}, "1 malformed input line skipped (each reported above)"},
		{Failures{Records: 2, BadLines: 5}, "2 feeds failed, 5 malformed input lines skipped (each reported above)"},
	} {
		err := tc.f.Err("feed", "feeds")
		if tc.want == "" {
			if err != nil {
				t.Errorf("%+v: %v, want nil", tc.f, err)
			}
			continue
		}
		if err == nil || err.Error() != tc.want || !errors.Is(err, ErrFailed) {
			t.Errorf("%+v: %v, want %q matching ErrFailed", tc.f, err, tc.want)
		}
	}
}

func TestDecodeCountsBadRecords(t *testing.T) {
	var f Failures
	var logs bytes.Buffer
	line := ndjson.Line{Num: 7, Type: "entry", Raw: []byte(`{"type":"entry","title":1}`)}
	var e ndjson.Entry
	if Decode(line, &e, slog.New(slog.NewTextHandler(&logs, nil)), &f) || f.BadLines != 1 || !strings.Contains(logs.String(), "line=7") {
		t.Fatalf("bad lines %d, log %s", f.BadLines, logs.String())
	}
}

func TestBatchTakesOnlyWhatIsWaiting(t *testing.T) {
	ch := make(chan int, 10)
	for i := 1; i <= 5; i++ {
		ch <- i
	}
	if got := Batch(0, ch, 4, 0); len(got) != 4 || got[0] != 0 || got[3] != 3 {
		t.Fatalf("capped batch %v", got)
	}
	if got := Batch(9, ch, 100, 0); len(got) != 3 || got[2] != 5 {
		t.Fatalf("rest %v", got)
	}
	// With a linger, what comes a little later joins the batch.
	go func() { ch <- 6 }()
	if got := Batch(9, ch, 2, time.Minute); len(got) != 2 || got[1] != 6 {
		t.Fatalf("lingering batch %v", got)
	}
	close(ch)
	if got := Batch(7, ch, 100, time.Minute); len(got) != 1 {
		t.Fatalf("closed channel: %v", got)
	}
}
