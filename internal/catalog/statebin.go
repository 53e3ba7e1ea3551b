package catalog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/internal/sched"
	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// Since schema version 15 feed-store writes the counts, sched and
// decision columns of feed_state in a binary layout of their own instead
// of zstd-compressed JSON: every fetch rewrites all three, a 304 too, and
// encoding/json with three zstd frames (each resetting the dictionary's
// tables) was 45% of feed-store's CPU for a 304. The layout is a byte
// stateBinV1, then the exported fields of the Go struct in declaration
// order, recursively:
//
//	int kinds      signed varint (encoding/binary)
//	bool           one byte, 0 or 1
//	float64/32     the IEEE 754 bits byte-reversed, as an unsigned varint:
//	               0 is one byte, a round number two or three
//	string         unsigned varint length, then the bytes
//	ndjson.Time    unsigned varint: 0 for the zero time, else 1 + the
//	               zig-zag Unix milliseconds (what its JSON keeps)
//	slice, map     unsigned varint: 0 for nil, else 1 + the length; then
//	               the elements (a map's by sorted key, key then value)
//	array, struct  the elements or fields, no length
//
// A value ends where its bytes end: fields missing at the end read as
// zero, so that a field appended to FeedCounts, sched.State or
// sched.Decision keeps the rows written before it readable. Any other
// change to those structs (a field inserted, removed or retyped) changes
// the layout: TestStateBinLayout fails, and the change needs a new
// version byte that the reader tells apart. Values written before are
// JSON text or zstd frames (statepack.go) and are still read: 0x01 can
// begin neither.
const stateBinV1 = 0x01

// errStateBin is a binary state value that does not fit its type.
var errStateBin = errors.New("damaged binary state value")

var timeType = reflect.TypeFor[ndjson.Time]()

// exportedFields returns the indexes of the struct type t's exported
// fields, worked out once per type: reflect.Type.Field copies a
// StructField at every call, which made a third of the layout's time.
func exportedFields(t reflect.Type) []int {
	if f, ok := fieldCache.Load(t); ok {
		return f.([]int)
	}
	var f []int
	for i := range t.NumField() {
		if t.Field(i).IsExported() {
			f = append(f, i)
		}
	}
	fieldCache.Store(t, f)
	return f
}

var fieldCache sync.Map // reflect.Type → []int

// appendStateBin appends v, a FeedCounts, sched.State or sched.Decision,
// in the binary layout.
func appendStateBin(b []byte, v any) []byte {
	// A copy that can be addressed, so that a time is read through a
	// pointer: reading it as a value (Value.Interface) allocated a copy
	// of each.
	rv := reflect.New(reflect.TypeOf(v)).Elem()
	rv.Set(reflect.ValueOf(v))
	if b == nil {
		b = make([]byte, 0, 256)
	}
	return appendBin(append(b, stateBinV1), rv)
}

func appendBin(b []byte, v reflect.Value) []byte {
	if v.Type() == timeType {
		t := *v.Addr().Interface().(*ndjson.Time)
		if y := t.UTC().Year(); t.IsZero() || y < 0 || y > 9999 { // as its JSON: null
			return append(b, 0)
		}
		ms := t.UnixMilli()
		return binary.AppendUvarint(b, 1+uint64(ms<<1^ms>>63))
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i := v.Int()
		return binary.AppendUvarint(b, uint64(i<<1^i>>63))
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Float64:
		return binary.AppendUvarint(b, bits.ReverseBytes64(math.Float64bits(v.Float())))
	case reflect.Float32:
		return binary.AppendUvarint(b, uint64(bits.ReverseBytes32(math.Float32bits(float32(v.Float())))))
	case reflect.String:
		s := v.String()
		return append(binary.AppendUvarint(b, uint64(len(s))), s...)
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 0)
		}
		b = binary.AppendUvarint(b, 1+uint64(v.Len()))
		for i := range v.Len() {
			b = appendBin(b, v.Index(i))
		}
		return b
	case reflect.Array:
		for i := range v.Len() {
			b = appendBin(b, v.Index(i))
		}
		return b
	case reflect.Map:
		if v.IsNil() {
			return append(b, 0)
		}
		b = binary.AppendUvarint(b, 1+uint64(v.Len()))
		keys := v.MapKeys()
		slices.SortFunc(keys, func(x, y reflect.Value) int { return strings.Compare(x.String(), y.String()) })
		for _, k := range keys {
			b = appendBin(appendBin(b, k), v.MapIndex(k))
		}
		return b
	case reflect.Struct:
		for _, i := range exportedFields(v.Type()) {
			b = appendBin(b, v.Field(i))
		}
		return b
	}
	panic(fmt.Sprintf("catalog: no binary layout for %s", v.Type())) // TestStateBinLayout meets it first
}

// readStateBin decodes a value appendStateBin wrote into dst, a pointer.
func readStateBin(b []byte, dst any) error {
	if len(b) == 0 || b[0] != stateBinV1 {
		return errStateBin
	}
	r := binReader{b: b[1:]}
	v := reflect.ValueOf(dst).Elem()
	v.SetZero()
	for _, i := range exportedFields(v.Type()) {
		if len(r.b) == 0 {
			break // the fields appended after it was written: zero
		}
		r.read(v.Field(i))
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = errStateBin
	}
	return r.err
}

type binReader struct {
	b   []byte
	err error
}

func (r *binReader) uvarint() uint64 {
	u, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errStateBin
		return 0
	}
	r.b = r.b[n:]
	return u
}

// length reads a length of items of at least one byte each.
func (r *binReader) length(u uint64) int {
	if u > uint64(len(r.b)) {
		r.err = errStateBin
		return 0
	}
	return int(u)
}

func (r *binReader) read(v reflect.Value) {
	if r.err != nil {
		return
	}
	if v.Type() == timeType {
		u := r.uvarint()
		t := v.Addr().Interface().(*ndjson.Time) // v is addressable: readStateBin decodes into a pointer's value
		if u == 0 {
			*t = ndjson.Time{}
			return
		}
		u--
		*t = ndjson.At(time.UnixMilli(int64(u>>1) ^ -int64(u&1)))
		return
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		u := r.uvarint()
		v.SetInt(int64(u>>1) ^ -int64(u&1))
	case reflect.Bool:
		if len(r.b) == 0 || r.b[0] > 1 {
			r.err = errStateBin
			return
		}
		v.SetBool(r.b[0] == 1)
		r.b = r.b[1:]
	case reflect.Float64:
		v.SetFloat(math.Float64frombits(bits.ReverseBytes64(r.uvarint())))
	case reflect.Float32:
		u := r.uvarint()
		if u > math.MaxUint32 {
			r.err = errStateBin
			return
		}
		v.SetFloat(float64(math.Float32frombits(bits.ReverseBytes32(uint32(u)))))
	case reflect.String:
		n := r.length(r.uvarint())
		if r.err == nil {
			v.SetString(string(r.b[:n]))
			r.b = r.b[n:]
		}
	case reflect.Slice:
		u := r.uvarint()
		if u == 0 || r.err != nil {
			return
		}
		n := r.length(u - 1)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			r.read(s.Index(i))
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			r.read(v.Index(i))
		}
	case reflect.Map:
		u := r.uvarint()
		if u == 0 || r.err != nil {
			return
		}
		n := r.length(u - 1)
		m := reflect.MakeMapWithSize(v.Type(), n)
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem() // SetMapIndex copies them
		for range n {
			k.SetZero()
			e.SetZero()
			r.read(k)
			r.read(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for _, i := range exportedFields(v.Type()) {
			r.read(v.Field(i))
		}
	default:
		r.err = fmt.Errorf("catalog: no binary layout for %s", v.Type())
	}
}

// binStates rewrites the counts, sched and decision of every state row
// written before schema version 15 (migration 15) in the binary layout,
// packChunk rows at a time, so that no fetch after the migration decodes
// JSON or zstd: the first cycle after an upgrade costs what every cycle
// costs.
func binStates(t *Tx) error {
	return rewriteStates(t, "rewriting the feed states in their binary layout (catalog schema version 15), once", func(i int, col []byte) (any, error) {
		if col[0] == stateBinV1 {
			return col, nil
		}
		dst := []any{&FeedCounts{}, &sched.State{}, &sched.Decision{}}[i]
		if err := readStateCol(col, dst); err != nil {
			return nil, err
		}
		return appendStateBin(nil, reflect.ValueOf(dst).Elem().Interface()), nil
	})
}
