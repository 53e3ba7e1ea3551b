package ndjson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// encodedByHand are the types appendRecord encodes, one value of each.
var encodedByHand = []any{&Entry{}, &Fetch{}, &Due{}, &Event{}, &Decision{}, &FeedEvent{}, &Alias{}, &Media{}}

// stdEncode is how records were encoded before appendRecord, and how every
// other type still is.
func stdEncode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return buf.Bytes(), err
}

// checkSame fails t unless Marshal and Writer.Write encode v exactly as
// encoding/json does, or fail as it does. It reports whether v was
// encodable.
func checkSame(t *testing.T, v any) bool {
	t.Helper()
	want, wantErr := stdEncode(v)
	line, fast := appendRecord(nil, v)
	got, err := Marshal(v)
	if wantErr != nil {
		if fast {
			t.Fatalf("%T: encoding/json fails (%v), appendRecord wrote %s", v, wantErr, line)
		}
		if err == nil || !strings.HasSuffix(err.Error(), wantErr.Error()) {
			t.Fatalf("%T: Marshal error %v, want one ending in %v", v, err, wantErr)
		}
		if b, err := Append([]byte("{}\n"), v); err == nil || string(b) != "{}\n" {
			t.Fatalf("%T: Append gave %q, %v; want the buffer as it was and an error", v, b, err)
		}
		return false
	}
	if !fast {
		t.Fatalf("%T: appendRecord left it to encoding/json\nvalue: %#v", v, v)
	}
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%T: Marshal differs from encoding/json (err %v)\n got: %q\nwant: %q", v, err, got, want)
	}
	prefix := []byte("{}\n")
	if got, err := Append(prefix[:len(prefix):len(prefix)], v); err != nil || !bytes.Equal(got, append(prefix, want...)) {
		t.Fatalf("%T: Append differs from encoding/json (err %v)\n got: %q\nwant: %q", v, err, got, want)
	}
	checkBuf.Reset()
	if err := checkWriter.Write(v); err != nil {
		t.Fatal(err)
	}
	if err := checkWriter.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(checkBuf.Bytes(), want) {
		t.Fatalf("%T: Writer.Write differs from encoding/json\n got: %q\nwant: %q", v, checkBuf.Bytes(), want)
	}
	return true
}

// checkWriter is checkSame's, made once: fuzzing makes millions of checks.
var (
	checkBuf    bytes.Buffer
	checkWriter = NewWriter(&checkBuf)
)

// TestEncoderMatchesJSON fills every exported field of every type
// encoded by hand, nested ones included, with random values and compares
// the encodings with encoding/json's. A field added to a record and not to
// its encoder fails it, and so does a field of a kind the filler does not
// know (teach it, and the encoder).
func TestEncoderMatchesJSON(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("random values from seed %d", seed) // shown on failure, to find them again
	f := filler{t: t, r: rand.New(rand.NewPCG(1, seed))}
	for _, proto := range encodedByHand {
		typ := reflect.TypeOf(proto).Elem()
		encodable := 0
		for range n {
			p := reflect.New(typ)
			f.fill(p.Elem())
			if checkSame(t, p.Interface()) {
				encodable++
			}
			checkSame(t, p.Elem().Interface()) // the record passed by value
		}
		if encodable < n/2 {
			t.Errorf("%s: only %d of %d random values were encodable", typ, encodable, n)
		}
	}
}

// filler fills values with random data chosen to reach every branch of
// the encoder: escapes, invalid UTF-8, nil and empty lists and maps, times
// out of range.
type filler struct {
	t testing.TB
	r *rand.Rand
}

var (
	timeType = reflect.TypeFor[Time]()
	rawType  = reflect.TypeFor[json.RawMessage]()
)

func (f *filler) fill(v reflect.Value) {
	switch v.Type() {
	case timeType:
		v.Set(reflect.ValueOf(f.time()))
		return
	case rawType:
		v.Set(reflect.ValueOf(f.raw()))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(f.string())
	case reflect.Int, reflect.Int64:
		v.SetInt(f.int())
	case reflect.Bool:
		v.SetBool(f.r.IntN(2) == 0)
	case reflect.Float64:
		v.SetFloat(f.float())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				f.fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		if f.r.IntN(3) == 0 {
			v.SetZero()
			return
		}
		p := reflect.New(v.Type().Elem())
		f.fill(p.Elem())
		v.Set(p)
	case reflect.Slice:
		switch f.r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		default:
			s := reflect.MakeSlice(v.Type(), 1+f.r.IntN(4), 4)
			for i := range s.Len() {
				f.fill(s.Index(i))
			}
			v.Set(s)
		}
	case reflect.Map:
		switch f.r.IntN(4) {
		case 0:
			v.SetZero()
		case 1:
			v.Set(reflect.MakeMap(v.Type()))
		default:
			m := reflect.MakeMap(v.Type())
			for range 1 + f.r.IntN(40) {
				k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
				f.fill(k)
				f.fill(e)
				m.SetMapIndex(k, e)
			}
			v.Set(m)
		}
	default:
		f.t.Fatalf("filler: no random values for %s (kind %s): teach the filler and the encoder", v.Type(), v.Kind())
	}
}

// pieces are what random strings are made of.
var pieces = []string{
	"", "a", "feed", "Hello, world", " ", "0", "https://example.com/a?b=c&d=e#f",
	`<p class="x">a &amp; b</p>`, "<", ">", "&", "'", `"`, `\`, "/", "\x7f",
	"\x00", "\x01", "\b", "\f", "\n", "\r", "\t", "\x0b", "\x1f", "\x1b[0m",
	"é", "日本語", "😀", "\u2028", "\u2029", "\u2027", "\u202a", "\ufffd", "\ufeff", "\u00a0",
	"\xff", "\xfe", "\x80", "\xc3", "\xe2\x80", "\xe2\x80\xa8"[:2], "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80", "\xf0\x9f\x98",
}

func (f *filler) string() string {
	var sb strings.Builder
	for range f.r.IntN(6) {
		if f.r.IntN(8) == 0 {
			for range 1 + f.r.IntN(8) { // any bytes at all
				sb.WriteByte(byte(f.r.IntN(256)))
			}
			continue
		}
		sb.WriteString(pieces[f.r.IntN(len(pieces))])
	}
	return sb.String()
}

func (f *filler) int() int64 {
	switch f.r.IntN(6) {
	case 0:
		return 0
	case 1:
		return math.MinInt64 + f.r.Int64N(2)
	case 2:
		return math.MaxInt64 - f.r.Int64N(2)
	case 3:
		return -f.r.Int64N(1000)
	default:
		return f.r.Int64N(1 << uint(f.r.IntN(63)))
	}
}

func (f *filler) float() float64 {
	switch f.r.IntN(12) {
	case 0:
		return 0
	case 1:
		return math.Copysign(0, -1)
	case 2:
		// NaN and infinities, which encoding/json refuses: now and then.
		if f.r.IntN(50) == 0 {
			return []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[f.r.IntN(3)]
		}
		return 1
	case 3: // about where encoding/json changes to exponents
		return []float64{1e-6, 9.999999e-7, 1e-7, 1e21, 9.99999e20, 1e20, -1e-7, -1e21, 123456789e-15}[f.r.IntN(9)]
	case 4:
		return float64(f.r.IntN(100000))
	case 5:
		f := math.Float64frombits(f.r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0.5
		}
		return f
	default:
		return (f.r.Float64() - 0.5) * math.Pow(10, float64(f.r.IntN(60)-30))
	}
}

func (f *filler) time() Time {
	switch f.r.IntN(10) {
	case 0:
		return Time{}
	case 1:
		return Time{time.Time{}.In(time.FixedZone("X", 3600))} // zero in another zone
	case 2: // the edges of the years a record can hold, in UTC and not
		t := []time.Time{
			time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(-1, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
			time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(9999, 12, 31, 23, 59, 59, 0, time.FixedZone("", -5*3600)),
			time.Date(0, 1, 1, 0, 30, 0, 0, time.FixedZone("", 3600)),
			time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
			time.Unix(math.MaxInt64/2, 0),
			time.Unix(math.MinInt64/2, 0),
		}[f.r.IntN(9)]
		return Time{t}
	case 3:
		return Time{time.Now()} // with a monotonic reading
	case 4:
		return At(time.UnixMilli(f.r.Int64N(4e12)))
	default: // any nanosecond of the years 0-9999, in any zone
		const span = 10000 * 366 * 24 * 3600
		t := time.Unix(f.r.Int64N(span)-62167219200, f.r.Int64N(1e9))
		if f.r.IntN(2) == 0 {
			t = t.Truncate(time.Duration(f.r.Int64N(3)+1) * time.Millisecond * 10)
		}
		return Time{t.In(time.FixedZone("", (f.r.IntN(49)-24)*1800))}
	}
}

// raws are what random json.RawMessages are made of: JSON with spaces to
// compact, and now and then something that is not JSON.
var raws = []string{
	`null`, `{}`, `[]`, `{"discovery_mode":"list","list_config":{"article_selector":"a.b > c","max_pages":3}}`,
	" { \"a\" : [ 1 , 2.5e10 , -0 , true , false , null ] ,\n\t\"b\" : \"x y\\n\\u2028 <&>\" } ",
	"\"\xff\xe2\x80\xa8 raw \xed\xa0\x80\"", ` "a\"b\\c" `, `123`, `-1.5E+3`, "\r\n[\r\n]\r\n",
}

var badRaws = []string{``, ` `, `{`, `{"a":}`, `[1,]`, `nul`, `"a`, "\"\x01\"", `{} {}`, `01`, `{"a" 1}`}

func (f *filler) raw() json.RawMessage {
	switch n := f.r.IntN(40); {
	case n < 8:
		return nil
	case n == 8:
		return json.RawMessage(badRaws[f.r.IntN(len(badRaws))])
	default:
		return json.RawMessage(raws[f.r.IntN(len(raws))])
	}
}

// FuzzEncoder compares the encoder with encoding/json on values the
// fuzzer chooses: strings in every kind of field, a RawMessage, numbers
// and a time.
func FuzzEncoder(f *testing.F) {
	for i, s := range pieces {
		f.Add(s, pieces[(i+1)%len(pieces)], []byte(raws[i%len(raws)]), int64(i)*1e15, float64(i)*1e-7, int64(-i))
	}
	for i, s := range badRaws {
		f.Add("x", "", []byte(s), int64(0), 0.0, int64(i))
	}
	f.Add("a <b> & c\nd", "\u2028", []byte(nil), int64(1798014712345_678_901), 1e21, int64(1<<62))
	f.Fuzz(func(t *testing.T, s, s2 string, raw []byte, nanos int64, x float64, n int64) {
		// Seconds from n too: years past 9999 and before 0 are written null.
		tm := Time{time.Unix(n, nanos).In(time.FixedZone("", int(n%50)*1800))}
		e := &Entry{
			Header: Head(s), EntryUID: s, FeedID: s2, Title: s, Summary: s2, Content: s + s2,
			Authors:    []Author{{Name: s, Email: s2, URI: s}},
			Categories: []string{s, s2},
			Enclosures: []Enclosure{{URL: s, Type: s2, Length: n}},
			Published:  tm, Updated: At(tm.Time), ContentHash: s2,
			RawRef:      RawRef{FetchID: s, Offset: n, Length: nanos},
			Derivations: []Derivation{{Kind: s, Keywords: []Keyword{{Term: s2, Score: x}}}},
			AliasOf:     &EntryRef{FeedID: s, EntryUID: s2},
			Status:      s, FirstSeen: tm, SeenCount: int(n),
		}
		checkSame(t, e)
		fe := &Fetch{
			Header: Head(s), FetchID: s2,
			Due: Due{
				Header: Head(s), URL: s, Labels: []string{s2}, ScheduledAt: tm, Scrape: raw,
				Access: Access{UserAgent: s, Headers: map[string]string{s: s2, s2: s, "": s + s2}, Auth: &Auth{s, s2}},
			},
			Redirects:       []Redirect{{URL: s, Status: int(n)}},
			RequestHeaders:  map[string]string{s: s},
			ResponseHeaders: map[string]string{s2: s, s + "x": s2},
			Error:           &Error{Class: s, Message: s2},
			Parse:           &Parse{Title: s, SkipHours: []int{int(n)}, SkipDays: []string{s2}, NewestPublished: tm},
			Scrape:          &Scrape{Rejections: []Rejection{{URL: s, Message: s2}}},
		}
		checkSame(t, fe)
		checkSame(t, &Decision{Header: Head(s), Reason: s2, At: tm, Inputs: DecisionInputs{EWMASecs: x, Scale: -x, CronError: s, SkipDays: []string{s2}}})
		checkSame(t, &Media{Header: Head(s), URL: s2, Message: s, Bytes: n, Restarted: n%2 == 0, At: tm, StoredIn: s})
	})
}

// TestTimeAppendJSONMatchesAppendFormat compares the hand-written time
// format with what MarshalJSON wrote before it: TimeLayout through
// AppendFormat. (TestEncoderMatchesJSON cannot: encoding/json calls the
// new MarshalJSON.)
func TestTimeAppendJSONMatchesAppendFormat(t *testing.T) {
	f := filler{t: t, r: rand.New(rand.NewPCG(2, uint64(time.Now().UnixNano())))}
	for range 100000 {
		tm := f.time()
		want := "null"
		if tm.writable() {
			want = `"` + tm.UTC().Format(TimeLayout) + `"`
		}
		if got := string(tm.appendJSON(nil)); got != want {
			t.Fatalf("%v: %s, want %s", tm.Time, got, want)
		}
		if got, _ := tm.MarshalJSON(); string(got) != want {
			t.Fatalf("%v: MarshalJSON %s, want %s", tm.Time, got, want)
		}
		if got := tm.String(); got != strings.Trim(want, `"`) && !(got == "" && want == "null") {
			t.Fatalf("%v: String %q, want %s", tm.Time, got, want)
		}
	}
}

func TestMarshalLeavesOtherTypesToEncodingJSON(t *testing.T) {
	for _, v := range []any{Head(TypeDue), map[string]any{"<": 1}, []string{"a\u2028"}, (*Entry)(nil), &Subscription{Scrape: json.RawMessage(`{ }`)}} {
		want, _ := stdEncode(v)
		got, err := Marshal(v)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%T: %q, %v; want %q", v, got, err, want)
		}
	}
	// A value encoding/json refuses gets its error, not a line.
	if _, err := Marshal(&Fetch{Due: Due{Scrape: json.RawMessage(`{"a":`)}}); err == nil || !strings.Contains(err.Error(), "RawMessage") {
		t.Errorf("invalid RawMessage: error %v", err)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.Write(&Decision{Inputs: DecisionInputs{Scale: math.NaN()}}); err == nil {
		t.Error("a NaN was written")
	}
	w.Flush()
	if buf.Len() != 0 {
		t.Errorf("a refused record left %q", buf.Bytes())
	}
}

// stdString is s as encoding/json writes it, HTML escaping off.
func stdString(s string) string {
	b, _ := stdEncode(s)
	return string(bytes.TrimSuffix(b, []byte("\n")))
}

// TestAppendStringBytes compares appendString with encoding/json on
// every byte that may begin a character, followed by the bytes at the
// edges of the ranges UTF-8 allows, at the start, in the middle and at
// the end of plain text, and after an escape near the end (the last
// eight bytes read at once, those before the escape's end set aside).
func TestAppendStringBytes(t *testing.T) {
	edges := []byte{0x00, 0x22, 0x5C, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xA7, 0xA8, 0xA9, 0xAA, 0xBF, 0xC0, 0xFF}
	for c0 := 0; c0 < 256; c0++ {
		for _, c1 := range edges {
			for _, c2 := range edges {
				for _, c3 := range []byte{0x80, 0xBF, 'x'} {
					seq := string([]byte{byte(c0), c1, c2, c3})
					for _, s := range []string{seq, "plain text " + seq + " plain text", "0123456789" + seq[:2], seq[:3], "01234567\x01" + seq[:3], "0123\"" + seq} {
						if got, want := string(appendString(nil, s)), stdString(s); got != want {
							t.Fatalf("%q: %s, want %s", s, got, want)
						}
					}
				}
			}
		}
	}
}

// FuzzAppendString holds appendString, which copies valid UTF-8 a
// character at a time without decoding it, to encoding/json.
func FuzzAppendString(f *testing.F) {
	for _, s := range pieces {
		f.Add(s)
	}
	for _, s := range []string{"\u2028\u2029\u2027\u202a", "a\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xf0\x8f\xbf\xbf", "\xe0\x9f\xbf", "\xc1\xbf", "日本語 \"q\" \\ \x7f\x01", "abcdefg\xc3", "abcdef\xe3\x81", "abcdefgh\xd0\xb4\xe3\x83\x8b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), stdString(s); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	})
}
