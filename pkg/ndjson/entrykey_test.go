package ndjson

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// keyEntry is an entry line as feed-parse writes it.
const keyEntry = `{"type":"entry","v":1,"entry_uid":"9c1b4e0c0b2f6a71","feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","native_id":"tag:publisher17.example.org,2026:17:55","canonical_link":"https://publisher17.example.org/posts/17/55","title":"Post 55 of feed 17","summary":"feedpipe stores what it fetched once and only once","content":"","authors":[{"name":"A. Writer","email":"","uri":""}],"categories":["bench"],"enclosures":[],"published":"2026-11-01T01:30:00Z","updated":null,"content_hash":"1a2b3c4d5e6f7081","raw_ref":{"fetch_id":"0190a000-0000-7000-8000-000000000011","offset":55,"length":900},"status":"","first_seen":null,"last_seen":null,"seen_count":0}`

var keyWant = EntryKey{FeedID: "6ba7b811-9dad-51d1-80b4-00c04fd430c8", EntryUID: "9c1b4e0c0b2f6a71", ContentHash: "1a2b3c4d5e6f7081"}

// keyCases are keyEntry with one thing changed, and whether EntryKey
// reads it. Those it does not read may be good entries (a form feedpipe
// does not write) or bad ones; Decode tells which.
var keyCases = []struct {
	name, from, to string
	ok             bool
}{
	{"as written", "", "", true},
	{"the fields in another order", `"type":"entry","v":1,`, ``, true},
	{"a later field first", `{"type":"entry"`, `{"seen_count":3,"type":"entry"`, false}, // seen_count twice
	{"escapes in text", `"Post 55 of feed 17"`, `"Post \"55\" \\ \/ \b\f\n\r\t \u00e9\uD800 of feed"`, true},
	{"bytes that are not UTF-8", `"Post 55`, "\"\xff\xfePost 55", true},
	{"null text", `"content":""`, `"content":null`, true},
	{"null lists and elements", `"authors":[{"name":"A. Writer","email":"","uri":""}],"categories":["bench"],"enclosures":[]`, `"authors":[null,{}],"categories":[null,"x"],"enclosures":null`, true},
	{"an enclosure", `"enclosures":[]`, `"enclosures":[{"url":"https://e/a.mp3","type":"audio/mpeg","length":183422},{"length":null}]`, true},
	{"no raw_ref", `"raw_ref":{"fetch_id":"0190a000-0000-7000-8000-000000000011","offset":55,"length":900}`, `"raw_ref":null`, true},
	{"raw_ref without a fetch", `"fetch_id":"0190a000-0000-7000-8000-000000000011",`, `"fetch_id":"",`, true},
	{"a time in another zone", `"updated":null`, `"updated":"2026-11-01T01:30:00.123456+02:00"`, true},
	{"an empty time", `"first_seen":null`, `"first_seen":""`, true},
	{"negative and zero numbers", `"offset":55`, `"offset":-0`, true},
	{"empty derivations", `"status":""`, `"status":"","derivations":[],"alias_of":null`, true},
	{"just the key", keyEntry, `{"feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","entry_uid":"9c1b4e0c0b2f6a71","content_hash":"1a2b3c4d5e6f7081"}`, true},

	// Good entries in a form feedpipe does not write.
	{"spaces", `"v":1,`, `"v": 1, `, false},
	{"a name in capitals", `"title"`, `"Title"`, false},
	{"an escaped name", `"title"`, `"t\u0069tle"`, false},
	{"an unknown field", `"v":1,`, `"v":1,"extra":{"a":[1,true]},`, false},
	{"a repeated field", `"v":1,`, `"v":1,"title":"again",`, false},
	{"derivations", `"status":""`, `"status":"","derivations":[{"kind":"keywords","keywords":[{"term":"a","score":0.5}]}]`, false},
	{"an alias", `"status":""`, `"status":"alias","alias_of":{"feed_id":"6ba7b811-9dad-51d1-80b4-00c04fd430c8","entry_uid":"9c1b4e0c0b2f6a72"}`, false},
	{"a big number", `"seen_count":0`, `"seen_count":1234567890123456789`, false},
	{"an escape in an id", `"1a2b3c4d5e6f7081"`, `"1a2b3c4d5e6f708\u0031"`, false},
	{"null raw_ref.fetch_id", `"fetch_id":"0190a000-0000-7000-8000-000000000011"`, `"fetch_id":null`, false},
	{"a trailing newline", keyEntry, keyEntry + "\n", false},

	// Bad entries.
	{"a number for a string", `"title":"Post 55 of feed 17"`, `"title":55`, false},
	{"true for a string", `"content":""`, `"content":true`, false},
	{"a string for a number", `"seen_count":0`, `"seen_count":"0"`, false},
	{"a fraction for an int", `"seen_count":0`, `"seen_count":0.5`, false},
	{"an exponent for an int", `"seen_count":0`, `"seen_count":1e3`, false},
	{"a leading zero", `"offset":55`, `"offset":055`, false},
	{"a bad time", `"2026-11-01T01:30:00Z"`, `"2026-11-01 01:30"`, false},
	{"an escaped time", `"2026-11-01T01:30:00Z"`, `"2026-11-01T01:30:00\u005a"`, false},
	{"an object for a list", `"categories":["bench"]`, `"categories":{"a":"bench"}`, false},
	{"a number in a list of strings", `"categories":["bench"]`, `"categories":["bench",1]`, false},
	{"a string for an author", `"authors":[{"name":"A. Writer","email":"","uri":""}]`, `"authors":["A. Writer"]`, false},
	{"a bad entry_uid", `"9c1b4e0c0b2f6a71"`, `"9C1B4E0C0B2F6A71"`, false},
	{"a bad feed_id", `"6ba7b811-9dad-51d1-80b4-00c04fd430c8"`, `"6ba7b811"`, false},
	{"no content_hash", `"1a2b3c4d5e6f7081"`, `""`, false},
	{"a bad fetch_id", `"0190a000-0000-7000-8000-000000000011"`, `"fetch-1"`, false},
	{"a control character", `"Post 55`, "\"Post\t55", false},
	{"a bad escape", `"Post 55`, `"Post \x55`, false},
	{"a short \\u", `"Post 55`, `"Post \u05`, false},
	{"an unterminated string", `"seen_count":0}`, `"seen_count":0,"title":"ab}`, false},
	{"a missing comma", `"v":1,`, `"v":1 `, false},
	{"a trailing comma", `"seen_count":0}`, `"seen_count":0,}`, false},
	{"a cut line", keyEntry, keyEntry[:len(keyEntry)/2], false},
	{"trailing data", keyEntry, keyEntry + `{}`, false},
	{"not an object", keyEntry, `["entry"]`, false},
	{"nothing", keyEntry, ``, false},
}

func keyCaseLine(from, to string) string { return strings.Replace(keyEntry, from, to, 1) }

func TestEntryKey(t *testing.T) {
	for _, tc := range keyCases {
		t.Run(tc.name, func(t *testing.T) {
			raw := keyCaseLine(tc.from, tc.to)
			if raw == keyEntry && tc.from != "" {
				t.Fatalf("%q is not in the entry", tc.from)
			}
			k, ok := Line{Num: 1, Type: TypeEntry, Raw: []byte(raw)}.EntryKey()
			if ok != tc.ok {
				t.Fatalf("EntryKey of %s: ok %v, want %v", raw, ok, tc.ok)
			}
			if ok && k != keyWant && tc.to != "" && !strings.Contains(tc.to, "entry_uid") {
				t.Fatalf("EntryKey of %s = %+v, want %+v", raw, k, keyWant)
			}
			checkEntryKey(t, []byte(raw))
		})
	}
}

// checkEntryKey fails when EntryKey reads a line that Decode into an
// Entry refuses, or reads another key than Decode gives.
func checkEntryKey(t *testing.T, raw []byte) {
	t.Helper()
	line := Line{Num: 1, Type: TypeEntry, Raw: raw}
	k, ok := line.EntryKey()
	if !ok {
		return
	}
	if !valid(raw) {
		t.Fatalf("EntryKey read %q, which is not JSON", raw)
	}
	var e Entry
	if err := line.Decode(&e); err != nil {
		t.Fatalf("EntryKey read %q, which Decode refuses: %v", raw, err)
	}
	if want := (EntryKey{FeedID: e.FeedID, EntryUID: e.EntryUID, ContentHash: e.ContentHash}); k != want {
		t.Fatalf("EntryKey of %q = %+v, Decode gives %+v", raw, k, want)
	}
}

// FuzzEntryKey checks that EntryKey reads a line only when Decode into an
// Entry accepts it, and reads the same key.
func FuzzEntryKey(f *testing.F) {
	for _, tc := range keyCases {
		f.Add([]byte(keyCaseLine(tc.from, tc.to)))
	}
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(benchEntry))
	f.Fuzz(checkEntryKey)
}

// TestEntryKeyReadsWhatMarshalWrites: every entry feedpipe writes, short
// of derivations and aliases, is read by EntryKey.
func TestEntryKeyReadsWhatMarshalWrites(t *testing.T) {
	f := &filler{t: t, r: rand.New(rand.NewPCG(14, 2))}
	for i := range 2000 {
		var e Entry
		f.fill(reflect.ValueOf(&e).Elem())
		e.EntryUID, e.FeedID, e.ContentHash = "9c1b4e0c0b2f6a71", "6ba7b811-9dad-51d1-80b4-00c04fd430c8", "1a2b3c4d5e6f7081"
		e.RawRef.FetchID = []string{"", "0190a000-0000-7000-8000-000000000011"}[i%2]
		e.Derivations, e.AliasOf = nil, nil
		e.V, e.SeenCount, e.RawRef.Offset, e.RawRef.Length = i, i%7, int64(i), -1
		for j := range e.Enclosures {
			e.Enclosures[j].Length = int64(i * j)
		}
		raw, err := Marshal(&e)
		if err != nil {
			continue // a time a record cannot hold
		}
		raw = raw[:len(raw)-1]
		if _, ok := (Line{Raw: raw}).EntryKey(); !ok {
			t.Fatalf("EntryKey does not read %s", raw)
		}
		checkEntryKey(t, raw)
	}
}

// TestEntryFieldsAreEntrys keeps EntryKey's tables in step with Entry and
// the structs it holds: a field added to them, or given another type,
// must be taught to EntryKey.
func TestEntryFieldsAreEntrys(t *testing.T) {
	str, i, i64, tm := reflect.TypeFor[string](), reflect.TypeFor[int](), reflect.TypeFor[int64](), reflect.TypeFor[Time]()
	// The types EntryKey reads each field as.
	want := map[string]reflect.Type{
		"type": str, "v": i, "entry_uid": str, "feed_id": str, "native_id": str, "canonical_link": str,
		"title": str, "summary": str, "content": str, "authors": reflect.TypeFor[[]Author](),
		"categories": reflect.TypeFor[[]string](), "enclosures": reflect.TypeFor[[]Enclosure](),
		"published": tm, "updated": tm, "content_hash": str, "raw_ref": reflect.TypeFor[RawRef](),
		"derivations": reflect.TypeFor[[]Derivation](), "alias_of": reflect.TypeFor[*EntryRef](),
		"status": str, "first_seen": tm, "last_seen": tm, "seen_count": i,
	}
	got := jsonFields(reflect.TypeFor[Entry]())
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Entry's fields are\n%v\nEntryKey reads\n%v", got, want)
	}
	if len(entryNames) != len(want) {
		t.Errorf("entryNames has %d names, Entry %d", len(entryNames), len(want))
	}
	for f, name := range entryNames {
		if _, ok := want[name]; !ok || entryField([]byte(name)) != f {
			t.Errorf("entryNames[%d] = %s, Entry's or entryField's is another", f, name)
		}
	}
	for _, name := range []string{"", "Type", "entry_ui", "seen_counts", "alias"} {
		if f := entryField([]byte(name)); f != -1 {
			t.Errorf("entryField(%q) = %d, want -1", name, f)
		}
	}
	for _, tc := range []struct {
		typ   reflect.Type
		names []string
		want  map[string]reflect.Type
	}{
		{reflect.TypeFor[Author](), authorFields, map[string]reflect.Type{"name": str, "email": str, "uri": str}},
		{reflect.TypeFor[Enclosure](), enclosureFields, map[string]reflect.Type{"url": str, "type": str, "length": i64}},
		{reflect.TypeFor[RawRef](), rawRefFields, map[string]reflect.Type{"fetch_id": str, "offset": i64, "length": i64}},
	} {
		if got := jsonFields(tc.typ); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s's fields are %v, EntryKey reads %v", tc.typ, got, tc.want)
		}
		if len(tc.names) != len(tc.want) {
			t.Errorf("EntryKey's names of %s: %v", tc.typ, tc.names)
		}
		for _, n := range tc.names {
			if _, ok := tc.want[n]; !ok {
				t.Errorf("EntryKey's names of %s: %v", tc.typ, tc.names)
			}
		}
	}
}

// jsonFields are a struct's fields by JSON name, those of embedded structs
// included.
func jsonFields(typ reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for _, f := range reflect.VisibleFields(typ) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		fields[name] = f.Type
	}
	return fields
}

// BenchmarkEntryKey compares EntryKey with Decode over entries as
// feed-parse writes them, each with ids and text of its own.
func BenchmarkEntryKey(b *testing.B) {
	lines := make([]Line, 1000)
	for i := range lines {
		raw := strings.NewReplacer("9c1b4e0c", fmt.Sprintf("%08x", i), "Post 55", fmt.Sprintf("Post %d", i), "/55", fmt.Sprintf("/%d", i)).Replace(keyEntry)
		lines[i] = Line{Num: i + 1, Type: TypeEntry, Raw: []byte(raw)}
	}
	b.Run("EntryKey", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok := lines[i%len(lines)].EntryKey(); !ok {
				b.Fatal("not read")
			}
			i++
		}
	})
	b.Run("Decode", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			var e Entry
			if err := lines[i%len(lines)].Decode(&e); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
