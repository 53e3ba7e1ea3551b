package media

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var typeCases = []struct {
	in   string
	want []string // nil: refused
}{
	{"", []string{}},
	{"audio/*", []string{"audio/*"}},
	{"audio/*,video/mp4", []string{"audio/*", "video/mp4"}},
	{" Audio/MPEG , audio/mpeg video/*", []string{"audio/mpeg", "video/*"}},
	{"*/*", []string{"*/*"}},
	{"audio/x-m4a,application/vnd.apple.mpegurl", []string{"audio/x-m4a", "application/vnd.apple.mpegurl"}},
	{"audio", nil},
	{"audio/", nil},
	{"/mpeg", nil},
	{"*/mpeg", nil},
	{"audio/mpeg;q=1", nil},
	{"audio/mp\x00eg", nil},
	{"aud io/mpeg", nil},
	{"audio/mpeg/x", nil},
	{"vidéo/mp4", nil},
}

func TestParseTypes(t *testing.T) {
	for _, tc := range typeCases {
		got, err := ParseTypes(tc.in)
		switch {
		case tc.want == nil && (err == nil || !errors.Is(err, ErrSetting)):
			t.Errorf("%q: %v, %v; want it refused", tc.in, got, err)
		case tc.want != nil && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		ct       string
		want     bool
	}{
		{[]string{"audio/*"}, "audio/mpeg", true},
		{[]string{"audio/*"}, "Audio/MPEG; charset=binary", true},
		{[]string{"audio/*"}, "video/mp4", false},
		{[]string{"audio/*", "video/mp4"}, "video/mp4", true},
		{[]string{"video/mp4"}, "video/mp4v", false},
		{[]string{"audio/*"}, "audiobook/x", false},
		{[]string{"*/*"}, "text/html", true},
		{[]string{"*/*"}, "", false},
		{[]string{"audio/*"}, "audio", false},
		{nil, "audio/mpeg", false},
	} {
		if got := Allowed(tc.patterns, tc.ct); got != tc.want {
			t.Errorf("%v %q: %v", tc.patterns, tc.ct, got)
		}
	}
	for _, g := range []string{"", "application/octet-stream", "Binary/Octet-Stream", "application/octet-stream; name=x.mp3"} {
		if !Generic(g) {
			t.Errorf("%q is not generic", g)
		}
	}
	if Generic("audio/mpeg") {
		t.Error("audio/mpeg is generic")
	}
}

var sizeCases = []struct {
	in   string
	want int64 // -1: refused
}{
	{"0", 0},
	{"1048576", 1 << 20},
	{"500M", 500 << 20},
	{"500m", 500 << 20},
	{"500MB", 500e6},
	{"500 MiB", 500 << 20},
	{"1.5GB", 1.5e9},
	{"2GiB", 2 << 30},
	{"10k", 10 << 10},
	{"10kB", 10e3},
	{"3T", 3 << 40},
	{"12B", 12},
	{"8E", -1},
	{"", -1},
	{"M", -1},
	{"-1M", -1},
	{"+1M", -1},
	{"1e9", -1},
	{"0x10", -1},
	{"1_000", -1},
	{"NaN", -1},
	{"Inf", -1},
	{"9223372036854775807", 9223372036854775807},
	{"9223372036854775807K", -1},
	{"99999999999999999999G", -1},
	{"1.5.1M", -1},
}

func TestParseSize(t *testing.T) {
	for _, tc := range sizeCases {
		got, err := ParseSize(tc.in)
		switch {
		case tc.want < 0 && (err == nil || !errors.Is(err, ErrSetting)):
			t.Errorf("%q: %d, %v; want it refused", tc.in, got, err)
		case tc.want >= 0 && (err != nil || got != tc.want):
			t.Errorf("%q: %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1 KiB", 1536: "1.5 KiB", 5 << 20: "5 MiB", 3 << 30: "3 GiB", 2<<30 + 300<<20: "2.3 GiB", 500 << 20: "500 MiB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// FuzzParseTypes: any input is read or refused, never more; what it
// reads is lower-case patterns, each once, each read back as itself.
func FuzzParseTypes(f *testing.F) {
	for _, tc := range typeCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTypes(s)
		if err != nil {
			if !errors.Is(err, ErrSetting) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error %q", s, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range got {
			if p != strings.ToLower(p) || seen[p] || strings.Count(p, "/") != 1 {
				t.Fatalf("%q: pattern %q of %v", s, p, got)
			}
			seen[p] = true
			again, err := ParseTypes(p)
			if err != nil || len(again) != 1 || again[0] != p {
				t.Fatalf("%q: pattern %q reads back as %v, %v", s, p, again, err)
			}
		}
		again, err := ParseTypes(strings.Join(got, ","))
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("%q: %v reads back as %v, %v", s, got, again, err)
		}
	})
}

// FuzzParseSize: any input is a size of at least 0 or refused; a size in
// bytes reads back as itself.
func FuzzParseSize(f *testing.F) {
	for _, tc := range sizeCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			if !errors.Is(err, ErrSetting) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("%q: error %q", s, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("%q: %d", s, n)
		}
		if back, err := ParseSize(strconv.FormatInt(n, 10) + "B"); err != nil || back != n {
			t.Fatalf("%q: %d reads back as %d, %v", s, n, back, err)
		}
	})
}
