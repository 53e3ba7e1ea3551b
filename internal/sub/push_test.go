package sub

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestWebhookSource: add --type webhook makes a source named by its URL
// webhook:NAME with a secret shown once; listings redact it, export keeps
// it only with secrets, and an import of a file without it says so; set
// --new-secret renews it; what a poll needs is refused.
func TestWebhookSource(t *testing.T) {
	e := newEnv(t)
	s, added, err := Add(e.cfg, Spec{URL: "deploys", Type: "webhook", Labels: []string{"ops"}})
	if err != nil || !added {
		t.Fatal(added, err)
	}
	if s.URL != "webhook:deploys" || s.SourceType != ndjson.SourceWebhook || len(s.WebhookSecret) != 64 || !strings.Contains(e.msg.String(), s.WebhookSecret) {
		t.Fatalf("source %+v, said %s", s, e.msg)
	}
	if _, added, err := Add(e.cfg, Spec{URL: "webhook:deploys"}); err != nil || added {
		t.Errorf("added twice: %v, %v", added, err)
	}
	for _, spec := range []Spec{{URL: "Not A Name", Type: "webhook"}, {URL: "ci", Type: "webhook", Interval: time.Hour},
		{URL: "ci", Type: "webhook", Fulltext: true}, {URL: "webhook:ci", Type: "rss"}} {
		if _, _, err := Add(e.cfg, spec); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v", spec, err)
		}
	}
	e.out.Reset()
	if err := List(e.cfg, ListOptions{JSON: true}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(e.out.String(), s.WebhookSecret) || !strings.Contains(e.out.String(), `"webhook_secret":"(redacted)"`) ||
		!strings.Contains(e.out.String(), `"endpoint":"/webhooks/`+s.FeedID+`"`) {
		t.Errorf("ls --json: %s", e.out)
	}
	for _, with := range []bool{false, true} {
		e.out.Reset()
		if err := ExportNDJSON(e.cfg, with); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(e.out.String(), s.WebhookSecret) != with {
			t.Errorf("export, with secrets %v: %s", with, e.out)
		}
	}
	// A backup with its secret restores it; one without says it lacks it.
	backup := e.out.String()
	f := newEnv(t)
	src, err := ReadImport(strings.NewReader(backup), "backup.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ImportFrom(f.cfg, src, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.subs(t); len(got) != 1 || got[0].WebhookSecret != s.WebhookSecret {
		t.Errorf("imported %+v", got)
	}
	g := newEnv(t)
	src, _ = ReadImport(strings.NewReader(strings.Replace(backup, `"webhook_secret":"`+s.WebhookSecret+`"`, `"webhook_secret":"(redacted)"`, 1)), "listing.ndjson")
	if _, err := ImportFrom(g.cfg, src, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.msg.String(), "comes without its secret: feed-sub set webhook:deploys --new-secret") {
		t.Errorf("import without the secret said %s", g.msg)
	}
	// A new secret, shown once; a feed has none to renew.
	e.msg.Reset()
	if err := Set(e.cfg, []string{"webhook:deploys"}, Changes{NewSecret: true, Labels: &[]string{"ops", "ci"}}); err != nil {
		t.Fatal(err)
	}
	renewed := e.subs(t)[0]
	if renewed.WebhookSecret == s.WebhookSecret || !strings.Contains(e.msg.String(), renewed.WebhookSecret) || renewed.URL != s.URL {
		t.Errorf("renewed %+v, said %s", renewed, e.msg)
	}
	if _, _, err := Add(e.cfg, Spec{URL: "https://example.org/feed.xml"}); err != nil {
		t.Fatal(err)
	}
	if err := Set(e.cfg, []string{"https://example.org/feed.xml"}, Changes{NewSecret: true}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a feed's new secret: %v", err)
	}
}

// TestPushSettings: push is off, preferred ("") or only; backfill is a
// feed's, never a website's or a webhook source's.
func TestPushSettings(t *testing.T) {
	e := newEnv(t)
	if _, _, err := Add(e.cfg, Spec{URL: "https://example.org/a.xml", Push: "only", Backfill: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Add(e.cfg, Spec{URL: "https://example.org/b.xml", Push: "sometimes"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("push sometimes: %v", err)
	}
	if _, _, err := Add(e.cfg, Spec{URL: "https://example.org/page.html", Type: "website", Backfill: true}); err != nil {
		t.Fatal(err)
	}
	subs := e.subs(t)
	if subs[0].Push != ndjson.PushOnly || !subs[0].Backfill || subs[1].Backfill {
		t.Fatalf("subscriptions %+v", subs)
	}
	pref, off, on := "preferred", "off", false
	if err := Set(e.cfg, []string{"https://example.org/a.xml"}, Changes{Push: &pref, Backfill: &on}); err != nil {
		t.Fatal(err)
	}
	if s := e.subs(t)[0]; s.Push != "" || s.Backfill {
		t.Errorf("after set: %+v", s)
	}
	if !strings.Contains(e.msg.String(), "push only -> preferred, backfill true -> false") {
		t.Errorf("set said %s", e.msg)
	}
	if err := Set(e.cfg, []string{"https://example.org/a.xml"}, Changes{Push: &off}); err != nil || e.subs(t)[0].Push != ndjson.PushOff {
		t.Errorf("push off: %v", err)
	}
}
