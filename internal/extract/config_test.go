package extract

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var configTests = []struct {
	in      string
	strict  bool
	wantErr string // "" for none
	mode    string
}{
	{in: ``},
	{in: `null`},
	{in: `{}`, mode: ""},
	{in: `{"discovery_mode": " LIST ", "list_config": {"article_selector": "h2 a"}}`, mode: "list"},
	{in: `{"discovery_mode": "direct", "article_config": {"title_selector": "h1, h2.title", "date_format": "%Y-%m-%d"}}`, mode: "direct"},
	{in: `{"discovery_mode": "list"}`, wantErr: "list mode needs list_config.article_selector"},
	{in: `{"discovery_mode": "crawl"}`, wantErr: `discovery_mode "crawl" is not direct or list`},
	{in: `{"list_config": {"max_pages": 101}}`, wantErr: "max_pages 101 is not between 0 and 100"},
	{in: `{"list_config": {"max_pages": -1}}`, wantErr: "max_pages -1"},
	{in: `{"article_config": {"title_selector": "h1[["}}`, wantErr: "article_config.title_selector"},
	{in: `{"article_config": {"content_selector": ","}}`, wantErr: "is not a CSS selector"},
	{in: `{"article_config": {"date_format": "%Q"}}`, wantErr: "%Q has no equivalent"},
	{in: `{"article_config": {"date_format": "yyyy-mm-dd"}}`, wantErr: "neither a Go layout"},
	{in: `{"article_config": {"title_selecter": "h1"}}`, strict: true, wantErr: `unknown field "title_selecter"`},
	{in: `{"article_config": {"title_selecter": "h1"}}`},
	{in: `{"discovery_mode": 3}`, wantErr: "cannot unmarshal number"},
	{in: `{} {}`, wantErr: "more than one JSON value"},
	{in: `[`, wantErr: "invalid scrape configuration"},
}

func TestParseConfig(t *testing.T) {
	for _, tt := range configTests {
		c, err := ParseConfig([]byte(tt.in), tt.strict)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrConfig) {
				t.Errorf("ParseConfig(%s) = %v, want an ErrConfig containing %q", tt.in, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("ParseConfig(%s): %v", tt.in, err)
		case c != nil && c.DiscoveryMode != tt.mode:
			t.Errorf("ParseConfig(%s) mode %q, want %q", tt.in, c.DiscoveryMode, tt.mode)
		}
	}
}

// FuzzParseConfig checks that no configuration crashes the decoder, and
// that one it accepts compiles into rules.
func FuzzParseConfig(f *testing.F) {
	for _, tt := range configTests {
		f.Add(tt.in, tt.strict)
	}
	f.Fuzz(func(t *testing.T, in string, strict bool) {
		c, err := ParseConfig([]byte(in), strict)
		if err != nil || c == nil {
			return
		}
		if _, err := CompileRules(&c.ArticleConfig); err != nil {
			t.Fatalf("accepted %q, but its rules do not compile: %v", in, err)
		}
		if err := CheckConfig(c); err != nil {
			t.Fatalf("accepted %q, but a second check fails: %v", in, err)
		}
	})
}

func TestSplitGroup(t *testing.T) {
	for in, want := range map[string]string{
		"h1, h2.title":            "h1|h2.title",
		`a[title="x,y"], b`:       `a[title="x,y"]|b`,
		":is(h1, h2) , p":         ":is(h1, h2)|p",
		`a[title='it\'s, ok'], b`: `a[title='it\'s, ok']|b`,
		" , h1 ,":                 "h1",
		"":                        "",
	} {
		if got := strings.Join(splitGroup(in), "|"); got != want {
			t.Errorf("splitGroup(%q) = %q, want %q", in, got, want)
		}
	}
}

var dateTests = []struct {
	value, format string
	want          string // RFC 3339, or "" for an error
}{
	{"2026-11-19", "2006-01-02", "2026-11-19T00:00:00Z"},
	{"2026-11-19 09:30", "%Y-%m-%d %H:%M", "2026-11-19T09:30:00Z"},
	{"19/11/2026 9:05", "%d/%m/%Y %-H:%M", "2026-11-19T09:05:00Z"},
	{"Thursday, 19 November 2026, 3:04 PM +0100", "%A, %d %B %Y, %-I:%M %p %z", "2026-11-19T14:04:00Z"},
	{"  19  Nov   2026 ", "%d %b %Y", "2026-11-19T00:00:00Z"},
	{"2026-11-19T09:30:00+01:00", "", "2026-11-19T08:30:00Z"},
	{"Thu, 19 Nov 2026 09:30:00 GMT", "", "2026-11-19T09:30:00Z"},
	// A value not in the format, but in a common form, is still read.
	{"2026-11-19T09:30:00Z", "%d/%m/%Y", "2026-11-19T09:30:00Z"},
	{"the day after tomorrow", "%Y-%m-%d", ""},
	{"", "%Y", ""},
	{"2026", "%Q", ""},
	{"yesterday", "", ""},
}

func TestParseDate(t *testing.T) {
	for _, tt := range dateTests {
		got, err := ParseDate(tt.value, tt.format)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("ParseDate(%q, %q) = %v, want an error", tt.value, tt.format, got)
		case tt.want != "" && err != nil:
			t.Errorf("ParseDate(%q, %q): %v", tt.value, tt.format, err)
		case tt.want != "" && got.Format(time.RFC3339) != tt.want:
			t.Errorf("ParseDate(%q, %q) = %s, want %s", tt.value, tt.format, got.Format(time.RFC3339), tt.want)
		}
	}
}

// FuzzParseDate checks that no value or format crashes date parsing, that a
// date read is in UTC, and that every strftime format converts to a layout
// without a lone %.
func FuzzParseDate(f *testing.F) {
	for _, tt := range dateTests {
		f.Add(tt.value, tt.format)
	}
	f.Fuzz(func(t *testing.T, value, format string) {
		if layout, err := GoLayout(format); err == nil && strings.Contains(format, "%") && strings.HasSuffix(layout, "%") && !strings.HasSuffix(format, "%%") {
			t.Fatalf("GoLayout(%q) = %q", format, layout)
		}
		tm, err := ParseDate(value, format)
		if err == nil && tm.Location() != time.UTC {
			t.Fatalf("ParseDate(%q, %q) = %v, not UTC", value, format, tm)
		}
	})
}
