package sub

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/catalog"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

func TestSet(t *testing.T) {
	list := func(cur *ndjson.ScrapeConfig) *ndjson.ScrapeConfig {
		return &ndjson.ScrapeConfig{DiscoveryMode: "list", ListConfig: ndjson.ListConfig{ArticleSelector: "ul a"}}
	}
	for _, tc := range []struct {
		name  string
		c     Changes
		check func(s ndjson.Subscription) bool
		msg   string // in the changed line
	}{
		{"name", Changes{Name: ptr(" B ")}, func(s ndjson.Subscription) bool { return s.Name == "B" }, `name "A" -> "B"`},
		{"name cleared", Changes{Name: ptr("")}, func(s ndjson.Subscription) bool { return s.Name == "" }, `name "A" -> ""`},
		{"labels replaced", Changes{Labels: ptr([]string{"y", " z ", "y"})}, func(s ndjson.Subscription) bool { return strings.Join(s.Labels, ",") == "y,z" }, `labels ["x"] -> ["y" "z"]`},
		{"labels cleared", Changes{Labels: ptr([]string{""})}, func(s ndjson.Subscription) bool { return len(s.Labels) == 0 }, `labels ["x"] -> []`},
		{"label added and removed", Changes{AddLabels: []string{"w"}, RmLabels: []string{"x"}}, func(s ndjson.Subscription) bool { return strings.Join(s.Labels, ",") == "w" }, `labels ["x"] -> ["w"]`},
		{"type", Changes{Type: ptr("RSS")}, func(s ndjson.Subscription) bool { return s.SourceType == "rss" }, "type auto -> rss"},
		{"fulltext on", Changes{Fulltext: ptr(true)}, func(s ndjson.Subscription) bool { return s.Fulltext }, "fulltext false -> true"},
		{"user agent", Changes{UserAgent: ptr("mine/2")}, func(s ndjson.Subscription) bool { return s.UserAgent == "mine/2" }, `user agent "mine/1" -> "mine/2"`},
		{"headers replaced", Changes{Headers: ptr([]string{"accept: x"})}, func(s ndjson.Subscription) bool { return len(s.Headers) == 1 && s.Headers["Accept"] == "x" },
			`headers ["X-Api-Key: (redacted)"] -> ["Accept: x"]`},
		{"header value", Changes{Headers: ptr([]string{"X-Api-Key: k2"})}, func(s ndjson.Subscription) bool { return s.Headers["X-Api-Key"] == "k2" },
			"header values changed"},
		{"headers cleared", Changes{Headers: ptr([]string{""})}, func(s ndjson.Subscription) bool { return len(s.Headers) == 0 }, "-> none"},
		{"auth", Changes{BasicAuth: ptr("bob:pw2")}, func(s ndjson.Subscription) bool { return s.Auth.Username == "bob" && s.Auth.Password == "pw2" },
			`basic auth user "ann", password (redacted) -> user "bob", password (redacted)`},
		{"password", Changes{BasicAuth: ptr("ann:pw2")}, func(s ndjson.Subscription) bool { return s.Auth.Password == "pw2" }, "basic auth password changed"},
		{"auth cleared", Changes{BasicAuth: ptr("")}, func(s ndjson.Subscription) bool { return s.Auth == nil }, "-> none"},
		{"scrape makes a website", Changes{Scrape: list}, func(s ndjson.Subscription) bool {
			return s.SourceType == "website" && strings.Contains(string(s.Scrape), `"article_selector":"ul a"`)
		}, "type auto -> website, scrape config none -> {"},
		{"schedule", Changes{Overrides: Overrides{Interval: ptr(time.Minute), Max: ptr(6 * time.Hour), Cron: ptr("@hourly")}},
			func(s ndjson.Subscription) bool {
				return s.IntervalSec == 300 && s.MaxIntervalSec == 6*3600 && s.Cron == "@hourly"
			},
			`interval 1h0m0s -> 5m0s, max interval none -> 6h0m0s, cron "" -> "@hourly"`},
		{"media on", Changes{Media: func(cur *ndjson.MediaSettings) *ndjson.MediaSettings {
			return &ndjson.MediaSettings{Types: []string{"Audio/*", "video/mp4", "audio/*"}, MaxBytes: 500 << 20}
		}}, func(s ndjson.Subscription) bool {
			return s.Media != nil && strings.Join(s.Media.Types, ",") == "audio/*,video/mp4" && s.Media.MaxBytes == 500<<20
		}, "media none -> [audio/*,video/mp4 up to 500 MiB a file]"},
		{"media that asks for nothing is none", Changes{Media: func(cur *ndjson.MediaSettings) *ndjson.MediaSettings {
			return &ndjson.MediaSettings{Types: []string{}, MaxBytes: 1 << 20}
		}}, func(s ndjson.Subscription) bool { return s.Media == nil }, "unchanged"},
		{"unchanged", Changes{Name: ptr("A")}, func(s ndjson.Subscription) bool { return s.Name == "A" }, "unchanged https://example.org/a: it has these settings already"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _, err := Add(e.cfg, Spec{URL: "https://example.org/a", Name: "A", Labels: []string{"x"}, Interval: time.Hour,
				UserAgent: "mine/1", Headers: []string{"X-Api-Key: k1"}, BasicAuth: "ann:secret"})
			if err != nil {
				t.Fatal(err)
			}
			e.msg.Reset()
			if err := Set(e.cfg, []string{a.FeedID}, tc.c); err != nil {
				t.Fatal(err)
			}
			s := e.subs(t)[0]
			if !tc.check(s) || !strings.Contains(e.msg.String(), tc.msg) {
				t.Fatalf("sub %+v\nmessages %q, want %q", s, e.msg, tc.msg)
			}
			if s.FeedID != a.FeedID || s.URL != a.URL || !s.CreatedAt.Equal(a.CreatedAt.Time) {
				t.Errorf("identity changed: %+v", s)
			}
			for _, secret := range []string{"k1", "k2", "secret", "pw2"} {
				if strings.Contains(e.msg.String(), secret) {
					t.Errorf("messages show a secret: %q", e.msg)
				}
			}
		})
	}
}

func TestSetRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		refs []string
		c    Changes
		want string
	}{
		{"nothing", nil, Changes{}, "nothing to set"},
		{"no feed", []string{}, Changes{Name: ptr("B")}, "name at least one subscription"},
		{"type", nil, Changes{Type: ptr("gopher")}, `type "gopher" is not one of`},
		{"header", nil, Changes{Headers: ptr([]string{"no colon"})}, "is not \"Name: value\""},
		{"header name", nil, Changes{Headers: ptr([]string{"Bad Name: v"})}, "is not \"Name: value\""},
		{"auth", nil, Changes{BasicAuth: ptr("nocolon")}, "wants user:password"},
		{"interval", nil, Changes{Overrides: Overrides{Interval: ptr(-time.Minute)}}, "negative"},
		{"cron", nil, Changes{Overrides: Overrides{Cron: ptr("61 * * * *")}}, "cron"},
		{"max below min", nil, Changes{Overrides: Overrides{Min: ptr(2 * time.Hour), Max: ptr(time.Hour)}}, "below min"},
		{"discovery mode on a feed", nil, Changes{Type: ptr("rss"), Scrape: func(*ndjson.ScrapeConfig) *ndjson.ScrapeConfig {
			return &ndjson.ScrapeConfig{DiscoveryMode: "direct"}
		}}, "a discovery mode is for websites"},
		{"media type", nil, Changes{Media: func(*ndjson.MediaSettings) *ndjson.MediaSettings {
			return &ndjson.MediaSettings{Types: []string{"audio"}}
		}}, `"audio" is not a media type`},
		{"bad scrape", nil, Changes{Scrape: func(*ndjson.ScrapeConfig) *ndjson.ScrapeConfig {
			return &ndjson.ScrapeConfig{DiscoveryMode: "list"}
		}}, "article_selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a", Name: "A"})
			b, _, _ := Add(e.cfg, Spec{URL: "https://example.org/b", Name: "B"})
			refs := tc.refs
			if refs == nil {
				refs = []string{b.FeedID, a.FeedID}
			}
			err := Set(e.cfg, refs, tc.c)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalid with %q", err, tc.want)
			}
			for i, s := range e.subs(t) {
				if s.Name != []string{"A", "B"}[i] || s.SourceType != "auto" || scrapeMembers(s.Scrape) != nil {
					t.Fatalf("a refused change changed %+v", s)
				}
			}
		})
	}
	// A feed that is not subscribed changes nothing, not even the others.
	e := newEnv(t)
	a, _, _ := Add(e.cfg, Spec{URL: "https://example.org/a", Name: "A"})
	if err := Set(e.cfg, []string{a.FeedID, "https://example.org/none"}, Changes{Name: ptr("B")}); !errors.Is(err, catalog.ErrNoSuchSubscription) || e.subs(t)[0].Name != "A" {
		t.Fatalf("err %v, subs %+v", err, e.subs(t))
	}
}
