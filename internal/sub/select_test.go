package sub

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/internal/sched"
)

// Bulk operations pick feeds by --all, --label and --state, which narrow
// each other, and say how many feeds they changed.
func TestBulk(t *testing.T) {
	e := newEnv(t)
	for _, s := range []Spec{
		{URL: "https://example.org/a", Labels: []string{"news"}},
		{URL: "https://example.org/b", Labels: []string{"news", "tech"}},
		{URL: "https://example.org/c", Labels: []string{"tech"}},
		{URL: "https://example.org/d"},
	} {
		if _, _, err := Add(e.cfg, s); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(sel Selection) []string {
		t.Helper()
		refs, err := Resolve(e.cfg, sel)
		if err != nil {
			t.Fatal(err)
		}
		return refs
	}
	step := func(name string, do func() error, want string) {
		t.Helper()
		e.msg.Reset()
		if err := do(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e.msg.String() != want {
			t.Errorf("%s said:\n%s\nwant:\n%s", name, e.msg.String(), want)
		}
	}
	step("disable --label news", func() error { return SetDisabled(e.cfg, resolve(Selection{Label: "news"}), true) },
		"feed-sub: disabled https://example.org/a\nfeed-sub: disabled https://example.org/b\nfeed-sub: disabled 2 feeds\n")
	step("disable --all", func() error { return SetDisabled(e.cfg, resolve(Selection{All: true}), true) },
		"feed-sub: https://example.org/a is disabled already\nfeed-sub: https://example.org/b is disabled already\n"+
			"feed-sub: disabled https://example.org/c\nfeed-sub: disabled https://example.org/d\n"+
			"feed-sub: disabled 2 feeds; 2 unchanged (as they were already)\n")
	step("enable --label tech --state disabled", func() error {
		return Enable(e.cfg, resolve(Selection{Label: "tech", State: "disabled"}), sched.Params{})
	}, "feed-sub: enabled https://example.org/b\nfeed-sub: enabled https://example.org/c\nfeed-sub: enabled 2 feeds\n")
	step("pause --state enabled", func() error {
		return Pause(e.cfg, resolve(Selection{State: "enabled"}), now.Add(time.Hour))
	}, "feed-sub: paused until 2026-11-21T13:00:00Z: https://example.org/b\nfeed-sub: paused until 2026-11-21T13:00:00Z: https://example.org/c\n"+
		"feed-sub: paused until 2026-11-21T13:00:00Z: 2 feeds\n")
	step("resume --label news", func() error { return Pause(e.cfg, resolve(Selection{Label: "news"}), time.Time{}) },
		"feed-sub: https://example.org/a is not paused\nfeed-sub: resumed https://example.org/b\nfeed-sub: resumed 1 feed; 1 unchanged (as they were already)\n")
	step("set --with-label tech", func() error {
		name := "T"
		return Set(e.cfg, resolve(Selection{Label: "tech"}), Changes{Name: &name})
	}, "feed-sub: changed https://example.org/b: name \"\" -> \"T\"\nfeed-sub: changed https://example.org/c: name \"\" -> \"T\"\nfeed-sub: changed 2 feeds\n")
	step("refetch --state paused", func() error { return Refetch(e.cfg, resolve(Selection{State: "paused"}), sched.Params{}) },
		"feed-sub: due now: https://example.org/c\nfeed-sub: note: https://example.org/c is paused until 2026-11-21T13:00:00Z; feed-sub resume lifts the pause\n")
	step("rm --state disabled", func() error { return Remove(e.cfg, resolve(Selection{State: "disabled"})) },
		"feed-sub: removed https://example.org/a\nfeed-sub: removed https://example.org/d\nfeed-sub: removed 2 feeds\n")
	if subs := e.subs(t); len(subs) != 2 || subs[0].URL != "https://example.org/b" || subs[1].URL != "https://example.org/c" {
		t.Errorf("left %+v", subs)
	}

	for _, tc := range []struct {
		sel  Selection
		want error
	}{
		{Selection{Label: "nope"}, catalog.ErrNoSuchSubscription},
		{Selection{State: "failing"}, catalog.ErrNoSuchSubscription},
		{Selection{State: "sleepy"}, ErrInvalid},
		{Selection{All: true, Refs: []string{"https://example.org/b"}}, ErrInvalid},
	} {
		if _, err := Resolve(e.cfg, tc.sel); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.sel, err, tc.want)
		}
	}
	if err := SetDisabled(e.cfg, nil, true); !errors.Is(err, ErrInvalid) {
		t.Errorf("no feeds named: %v", err)
	}
}

// Past 20 feeds, only how many are said.
func TestBulkSaysHowMany(t *testing.T) {
	e := newEnv(t)
	for i := range 25 {
		if _, _, err := Add(e.cfg, Spec{URL: fmt.Sprintf("https://example.org/%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	refs, err := Resolve(e.cfg, Selection{All: true})
	if err != nil || len(refs) != 25 {
		t.Fatal(len(refs), err)
	}
	e.msg.Reset()
	if err := SetDisabled(e.cfg, refs, true); err != nil {
		t.Fatal(err)
	}
	if e.msg.String() != "feed-sub: disabled 25 feeds\n" {
		t.Errorf("said %q", e.msg.String())
	}
	if subs := e.subs(t); !subs[24].Disabled || strings.Count(e.msg.String(), "\n") != 1 {
		t.Errorf("not disabled: %+v", subs[24])
	}
}
