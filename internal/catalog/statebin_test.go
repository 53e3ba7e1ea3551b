package catalog

import (
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// TestStateBinLayout: the binary layout of the three columns, field by
// field, is the one testdata/statebin-layout.txt records. A field
// appended at the end of FeedCounts, sched.State or sched.Decision only
// adds lines at the end of its section (rows written before read it as
// zero): rewrite the file with -update. Any other change breaks the rows
// already written: it needs a new layout version (statebin.go).
func TestStateBinLayout(t *testing.T) {
	var b strings.Builder
	for _, v := range []any{FeedCounts{}, sched.State{}, sched.Decision{}} {
		typ := reflect.TypeOf(v)
		b.WriteString("[" + typ.String() + "]\n")
		layout(&b, typ, "")
	}
	const file = "testdata/statebin-layout.txt"
	if *update {
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the binary layout changed (see statebin.go): want\n%s\ngot\n%s", want, got)
	}
}

func layout(b *strings.Builder, t reflect.Type, path string) {
	if t.Kind() == reflect.Struct && t != timeType {
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				layout(b, f.Type, strings.TrimPrefix(path+"."+f.Name, "."))
			}
		}
		return
	}
	b.WriteString(path + " " + t.String() + "\n")
}

// fill sets every field of v to a value of its own, none zero.
func fill(v reflect.Value, n *int) {
	*n++
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(ndjson.At(time.Date(2026, 11, 29, 3, 4, 5, *n*1e6, time.UTC))))
		return
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(-*n * 1000))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*n) + 0.125)
	case reflect.String:
		v.SetString(strings.Repeat("é", *n%5+1))
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(s.Index(0), n)
		fill(s.Index(1), n)
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			fill(v.Index(i), n)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 3 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(k, n)
			fill(e, n)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	}
}

// TestStateBinRoundTrip: every field comes back as it went, zero or not,
// and a value cut between its top-level fields reads those as zero.
func TestStateBinRoundTrip(t *testing.T) {
	for _, v := range []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}} {
		var n int
		fill(reflect.ValueOf(v).Elem(), &n)
		for _, src := range []any{reflect.ValueOf(v).Elem().Interface(), reflect.Zero(reflect.TypeOf(v).Elem()).Interface()} {
			b := appendStateBin(nil, src)
			got := reflect.New(reflect.TypeOf(src))
			if err := readStateBin(b, got.Interface()); err != nil {
				t.Fatalf("%T: %v", src, err)
			}
			if !reflect.DeepEqual(got.Elem().Interface(), src) {
				t.Errorf("%T:\n got %+v\nwant %+v", src, got.Elem().Interface(), src)
			}
		}
	}
	// The counts as an older layout with only its first two fields.
	b := appendStateBin(nil, FeedCounts{Fetches: 3, OK: 2})
	var c FeedCounts
	if err := readStateBin(b[:3], &c); err != nil || !reflect.DeepEqual(c, FeedCounts{Fetches: 3, OK: 2}) {
		t.Errorf("cut after two fields: %+v %v", c, err)
	}
	if err := readStateBin(b[:2], &c); err != nil || !reflect.DeepEqual(c, FeedCounts{Fetches: 3}) {
		t.Errorf("cut after one field: %+v %v", c, err)
	}
}

// BenchmarkStateBin times the binary layout of a state as every fetch
// writes it and feed-store reads it back: the counts, the scheduler's
// state and the decision, every field filled.
func BenchmarkStateBin(b *testing.B) {
	var values []any
	for _, v := range []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}} {
		var n int
		fill(reflect.ValueOf(v).Elem(), &n)
		values = append(values, reflect.ValueOf(v).Elem().Interface())
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range values {
				appendStateBin(nil, v)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		cols := make([][]byte, len(values))
		for i, v := range values {
			cols[i] = appendStateBin(nil, v)
		}
		dst := []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}}
		b.ReportAllocs()
		for b.Loop() {
			for i, col := range cols {
				if err := readStateBin(col, dst[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// FuzzStateBin: no value, however damaged, makes the decoder panic or
// allocate more than its length allows; what it accepts encodes again.
func FuzzStateBin(f *testing.F) {
	for _, v := range []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}} {
		var n int
		fill(reflect.ValueOf(v).Elem(), &n)
		f.Add(appendStateBin(nil, reflect.ValueOf(v).Elem().Interface()))
	}
	f.Add([]byte{stateBinV1})
	f.Add([]byte{stateBinV1, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, dst := range []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}} {
			if err := readStateBin(b, dst); err != nil {
				continue
			}
			again := reflect.New(reflect.TypeOf(dst).Elem())
			if err := readStateBin(appendStateBin(nil, reflect.ValueOf(dst).Elem().Interface()), again.Interface()); err != nil {
				t.Fatalf("%T: a decoded value does not read again: %v", dst, err)
			}
		}
	})
}
