package media

import (
	"errors"
	"fmt"
	"math"
	"mime"
	"slices"
	"strconv"
	"strings"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// ErrSetting marks a media setting that cannot be read: a media type
// pattern or a size of the wrong shape.
var ErrSetting = errors.New("media: bad setting")

// ParseTypes reads the media types a feed's files may have (feed-sub set
// --media): patterns type/subtype or type/* (or */*), as RFC 9110 §8.3.1
// writes a media type without parameters, separated by commas or spaces,
// any case. It returns them lower-cased, each once, in the order given;
// none for "" (no enclosure).
func ParseTypes(s string) ([]string, error) {
	out := []string{}
	for _, p := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
		p = strings.ToLower(p)
		typ, sub, ok := strings.Cut(p, "/")
		switch {
		case !ok || !isToken(typ) && typ != "*" || !isToken(sub) && sub != "*":
			return nil, fmt.Errorf("%w: %q is not a media type such as audio/mpeg, or a pattern such as audio/*", ErrSetting, clip(p))
		case typ == "*" && sub != "*":
			return nil, fmt.Errorf("%w: %q: a pattern's type is * only as */*", ErrSetting, clip(p))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// isToken reports whether s is a token (RFC 9110 §5.6.2): the shape of a
// media type's type and subtype.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// Allowed reports whether the media type mt (a Content-Type, parameters
// and case aside) is one the patterns take.
func Allowed(patterns []string, mt string) bool {
	mt = MediaType(mt)
	typ, _, ok := strings.Cut(mt, "/")
	if !ok {
		return false
	}
	for _, p := range patterns {
		if p == mt || p == "*/*" || strings.HasSuffix(p, "/*") && strings.TrimSuffix(p, "/*") == typ {
			return true
		}
	}
	return false
}

// MediaType is the media type of a Content-Type value, lower-cased and
// without parameters; "" for none or one that cannot be read.
func MediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if t, s, ok := strings.Cut(mt, "/"); !ok || !isToken(t) || !isToken(s) {
			return ""
		}
	}
	return mt
}

// generic are the media types that say only "some bytes": a file served
// with one is known by its first bytes.
var generic = []string{"", "application/octet-stream", "binary/octet-stream", "application/binary", "application/download", "application/force-download"}

// Generic reports whether a media type says nothing of the file.
func Generic(mt string) bool { return slices.Contains(generic, MediaType(mt)) }

// size units, GNU coreutils' way: K, M, G, T and KiB.. are powers of
// 1024, KB, MB, GB, TB powers of 1000; B or no unit is bytes.
var units = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseSize reads a size such as 500M, 1.5GB, 2GiB or 1048576 (bytes), as
// GNU coreutils reads them: K, M, G, T and KiB, MiB, GiB, TiB are powers
// of 1024, KB, MB, GB, TB powers of 1000, any case.
func ParseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range units {
		if n, ok := strings.CutSuffix(t, u.suffix); ok {
			t, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	bad := fmt.Errorf("%w: %q is not a size such as 500M, 1.5GB or 1048576 (bytes)", ErrSetting, clip(s))
	if t == "" || strings.ContainsAny(t, "+-eEpPxX_") {
		return 0, bad
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%w: %q is too large", ErrSetting, clip(s))
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, bad
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w: %q is too large", ErrSetting, clip(s))
	}
	return int64(v), nil
}

// FormatSize writes a size for people: 512 B, 1.5 KiB, 20 MiB, 2.3 GiB.
func FormatSize(n int64) string {
	if n < 1<<10 {
		return strconv.FormatInt(n, 10) + " B"
	}
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		v /= 1 << 10
		unit = u
		if v < 1<<10 {
			break
		}
	}
	if v == math.Trunc(v) || v >= 100 {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + unit
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}

// Settings checks and cleans a feed's media settings, as feed-sub keeps
// them: the types read again (ParseTypes), a size not below 0. It returns
// nil for settings that ask for nothing: the feed has no media.
func Settings(m *ndjson.MediaSettings) (*ndjson.MediaSettings, error) {
	if m == nil {
		return nil, nil
	}
	types, err := ParseTypes(strings.Join(m.Types, ","))
	if err != nil {
		return nil, err
	}
	if m.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: a file's cap of %d bytes: it must be 0 (feed-media's) or more", ErrSetting, m.MaxBytes)
	}
	out := &ndjson.MediaSettings{Types: types, MaxBytes: m.MaxBytes, Images: m.Images}
	if !out.On() {
		return nil, nil
	}
	return out, nil
}
