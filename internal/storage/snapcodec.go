package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// The snapshots' record codec: a compact binary form of a Go value, laid
// out by its type, compiled once per type by reflection into functions
// that read and write the fields in place. It exists because it is fast
// where it matters, on load: it knows the type, so nothing about it is
// read from the data; numbers are varints; strings are copied, packed,
// into large blocks instead of being allocated one by one. It handles
// what records are made of (booleans, numbers, strings, arrays, slices,
// maps with string keys, pointers, structs, time.Time); a type with
// anything else (interfaces, channels, functions) has no codec, and no
// snapshot: its file is read as JSON. It keeps what JSON keeps: a nil
// slice or map stays nil, an empty one empty. Only exported fields are
// written, as in JSON.

// errSnapshotData is any malformed snapshot record: the snapshot is
// ignored.
var errSnapshotData = errors.New("storage: malformed snapshot record")

type codec struct {
	enc func(b []byte, p unsafe.Pointer) []byte
	dec func(d *decoder, p unsafe.Pointer)
}

// decoder reads records from one string; its strings share that string's
// bytes.
type decoder struct {
	s   string
	i   int
	bad bool
	// arena holds copies of the strings read, packed: the records keep
	// only their strings alive, not the whole snapshot. A chunk is never
	// written again where a string points.
	arena []byte
}

func (d *decoder) uvarint() uint64 {
	if d.bad {
		return 0
	}
	var v uint64
	var shift uint
	for d.i < len(d.s) {
		c := d.s[d.i]
		d.i++
		if c < 0x80 {
			if shift >= 64 || shift == 63 && c > 1 {
				break
			}
			return v | uint64(c)<<shift
		}
		v |= uint64(c&0x7f) << shift
		shift += 7
	}
	d.bad = true
	return 0
}

func (d *decoder) varint() int64 {
	u := d.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// length reads a length written as n+1 (0 is nil) and checks that at
// least n*min bytes follow.
func (d *decoder) length(min int) (n int, isNil bool) {
	u := d.uvarint()
	if u == 0 {
		return 0, true
	}
	u--
	if d.bad || u > uint64(len(d.s)-d.i) || min > 0 && u*uint64(min) > uint64(len(d.s)-d.i) {
		d.bad = true
		return 0, true
	}
	return int(u), false
}

// fixed reads an n-byte little-endian number.
func (d *decoder) fixed(n int) uint64 {
	if d.bad || len(d.s)-d.i < n {
		d.bad = true
		return 0
	}
	var v uint64
	for k := n - 1; k >= 0; k-- {
		v = v<<8 | uint64(d.s[d.i+k])
	}
	d.i += n
	return v
}

func (d *decoder) str() string {
	n, _ := d.length(1)
	if n == 0 {
		return ""
	}
	if cap(d.arena)-len(d.arena) < n {
		d.arena = make([]byte, 0, max(n, 256<<10))
	}
	start := len(d.arena)
	d.arena = append(d.arena, d.s[d.i:d.i+n]...)
	d.i += n
	return unsafe.String(&d.arena[start], n)
}

func appendLen(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

var (
	codecs   sync.Map // reflect.Type -> *codec, or error
	timeType = reflect.TypeFor[time.Time]()
)

// codecFor returns the codec of t, or an error naming what it cannot
// handle.
func codecFor(t reflect.Type) (*codec, error) {
	if c, ok := codecs.Load(t); ok {
		if err, isErr := c.(error); isErr {
			return nil, err
		}
		return c.(*codec), nil
	}
	c, err := compile(t, map[reflect.Type]*codec{})
	if err != nil {
		codecs.Store(t, err)
		return nil, err
	}
	codecs.Store(t, c)
	return c, nil
}

func compile(t reflect.Type, building map[reflect.Type]*codec) (*codec, error) {
	if c, ok := building[t]; ok {
		return c, nil // a recursive type: filled in below
	}
	c := &codec{}
	building[t] = c
	if t == timeType {
		// Seconds and nanoseconds, read back in UTC as ndjson.Time's
		// UnmarshalJSON does; the zero time stays zero.
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			tm := *(*time.Time)(p)
			if tm.IsZero() {
				return append(b, 0)
			}
			b = append(b, 1)
			b = binary.AppendVarint(b, tm.Unix())
			return binary.AppendUvarint(b, uint64(tm.Nanosecond()))
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			if d.i >= len(d.s) {
				d.bad = true
				return
			}
			flag := d.s[d.i]
			d.i++
			if flag == 0 {
				*(*time.Time)(p) = time.Time{}
				return
			}
			sec, ns := d.varint(), d.uvarint()
			*(*time.Time)(p) = time.Unix(sec, int64(ns)).UTC()
		}
		return c, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			if *(*bool)(p) {
				return append(b, 1)
			}
			return append(b, 0)
		}
		c.dec = func(d *decoder, p unsafe.Pointer) { *(*bool)(p) = d.uvarint() != 0 }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		size := t.Size()
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			var v int64
			switch size {
			case 1:
				v = int64(*(*int8)(p))
			case 2:
				v = int64(*(*int16)(p))
			case 4:
				v = int64(*(*int32)(p))
			default:
				v = *(*int64)(p)
			}
			return binary.AppendVarint(b, v)
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			v := d.varint()
			switch size {
			case 1:
				*(*int8)(p) = int8(v)
			case 2:
				*(*int16)(p) = int16(v)
			case 4:
				*(*int32)(p) = int32(v)
			default:
				*(*int64)(p) = v
			}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		size := t.Size()
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			var v uint64
			switch size {
			case 1:
				v = uint64(*(*uint8)(p))
			case 2:
				v = uint64(*(*uint16)(p))
			case 4:
				v = uint64(*(*uint32)(p))
			default:
				v = *(*uint64)(p)
			}
			return binary.AppendUvarint(b, v)
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			v := d.uvarint()
			switch size {
			case 1:
				*(*uint8)(p) = uint8(v)
			case 2:
				*(*uint16)(p) = uint16(v)
			case 4:
				*(*uint32)(p) = uint32(v)
			default:
				*(*uint64)(p) = v
			}
		}
	case reflect.Float32:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint32(b, math.Float32bits(*(*float32)(p)))
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			*(*float32)(p) = math.Float32frombits(uint32(d.fixed(4)))
		}
	case reflect.Float64:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			return binary.LittleEndian.AppendUint64(b, math.Float64bits(*(*float64)(p)))
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			*(*float64)(p) = math.Float64frombits(d.fixed(8))
		}
	case reflect.String:
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			s := *(*string)(p)
			b = binary.AppendUvarint(b, uint64(len(s))+1)
			return append(b, s...)
		}
		c.dec = func(d *decoder, p unsafe.Pointer) { *(*string)(p) = d.str() }
	case reflect.Array:
		ec, err := compile(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		n, size := t.Len(), t.Elem().Size()
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			for i := range n {
				b = ec.enc(b, unsafe.Add(p, uintptr(i)*size))
			}
			return b
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			for i := range n {
				ec.dec(d, unsafe.Add(p, uintptr(i)*size))
			}
		}
		if t.Elem().Kind() == reflect.Float32 { // the scheduler's hour and day profiles
			c.dec = func(d *decoder, p unsafe.Pointer) {
				if d.bad || len(d.s)-d.i < 4*n {
					d.bad = true
					return
				}
				for i := range n {
					j := d.i + 4*i
					bits := uint32(d.s[j]) | uint32(d.s[j+1])<<8 | uint32(d.s[j+2])<<16 | uint32(d.s[j+3])<<24
					*(*float32)(unsafe.Add(p, uintptr(i)*4)) = math.Float32frombits(bits)
				}
				d.i += 4 * n
			}
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			c.enc = func(b []byte, p unsafe.Pointer) []byte {
				s := *(*[]byte)(p)
				b = appendLen(b, len(s), s == nil)
				return append(b, s...)
			}
			c.dec = func(d *decoder, p unsafe.Pointer) {
				n, isNil := d.length(1)
				if isNil {
					*(*[]byte)(p) = nil
					return
				}
				*(*[]byte)(p) = []byte(d.s[d.i : d.i+n])
				d.i += n
			}
			break
		}
		ec, err := compile(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		size := t.Elem().Size()
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := reflect.NewAt(t, p).Elem()
			b = appendLen(b, v.Len(), v.IsNil())
			base := v.UnsafePointer()
			for i := range v.Len() {
				b = ec.enc(b, unsafe.Add(base, uintptr(i)*size))
			}
			return b
		}
		if t.Elem().Kind() == reflect.Int64 { // the scheduler's publication times
			c.dec = func(d *decoder, p unsafe.Pointer) {
				n, isNil := d.length(1)
				if isNil {
					*(*[]int64)(p) = nil
					return
				}
				s := make([]int64, n)
				for i := range s {
					s[i] = d.varint()
				}
				*(*[]int64)(p) = s
			}
			break
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			n, isNil := d.length(1)
			v := reflect.NewAt(t, p).Elem()
			if isNil {
				v.SetZero()
				return
			}
			s := reflect.MakeSlice(t, n, n)
			base := s.UnsafePointer()
			for i := 0; i < n && !d.bad; i++ {
				ec.dec(d, unsafe.Add(base, uintptr(i)*size))
			}
			v.Set(s)
		}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("storage: snapshot codec: map key %s", t.Key())
		}
		kc, err := compile(t.Key(), building)
		if err != nil {
			return nil, err
		}
		vc, err := compile(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			v := reflect.NewAt(t, p).Elem()
			b = appendLen(b, v.Len(), v.IsNil())
			k, e := reflect.New(t.Key()).Elem(), reflect.New(t.Elem()).Elem()
			for it := v.MapRange(); it.Next(); {
				k.SetIterKey(it)
				e.SetIterValue(it)
				b = kc.enc(b, k.Addr().UnsafePointer())
				b = vc.enc(b, e.Addr().UnsafePointer())
			}
			return b
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			n, isNil := d.length(2)
			v := reflect.NewAt(t, p).Elem()
			if isNil {
				v.SetZero()
				return
			}
			m := reflect.MakeMapWithSize(t, n)
			for i := 0; i < n && !d.bad; i++ {
				k, e := reflect.New(t.Key()), reflect.New(t.Elem())
				kc.dec(d, k.UnsafePointer())
				vc.dec(d, e.UnsafePointer())
				m.SetMapIndex(k.Elem(), e.Elem())
			}
			v.Set(m)
		}
	case reflect.Pointer:
		ec, err := compile(t.Elem(), building)
		if err != nil {
			return nil, err
		}
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(b, 0)
			}
			return ec.enc(append(b, 1), q)
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			if d.uvarint() == 0 {
				*(*unsafe.Pointer)(p) = nil
				return
			}
			q := reflect.New(t.Elem()).UnsafePointer()
			ec.dec(d, q)
			*(*unsafe.Pointer)(p) = q
		}
	case reflect.Struct:
		type field struct {
			off uintptr
			c   *codec
		}
		var fields []field
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if !f.IsExported() && f.Type.Kind() != reflect.Struct {
				continue
			}
			fc, err := compile(f.Type, building)
			if err != nil {
				return nil, fmt.Errorf("%w (field %s.%s)", err, t, f.Name)
			}
			fields = append(fields, field{f.Offset, fc})
		}
		c.enc = func(b []byte, p unsafe.Pointer) []byte {
			for _, f := range fields {
				b = f.c.enc(b, unsafe.Add(p, f.off))
			}
			return b
		}
		c.dec = func(d *decoder, p unsafe.Pointer) {
			for _, f := range fields {
				f.c.dec(d, unsafe.Add(p, f.off))
			}
		}
	default:
		return nil, fmt.Errorf("storage: snapshot codec: no encoding for %s", t)
	}
	return c, nil
}

// shape describes t as far as the codec sees it: a snapshot written for
// another shape (an older feedpipe, before a field was added) is not read.
func shape(t reflect.Type, seen map[reflect.Type]bool) string {
	if t == timeType {
		return "time"
	}
	switch t.Kind() {
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), shape(t.Elem(), seen))
	case reflect.Slice:
		return "[]" + shape(t.Elem(), seen)
	case reflect.Map:
		return "map[" + shape(t.Key(), seen) + "]" + shape(t.Elem(), seen)
	case reflect.Pointer:
		return "*" + shape(t.Elem(), seen)
	case reflect.Struct:
		if seen[t] {
			return t.String()
		}
		seen[t] = true
		var b strings.Builder
		b.WriteString("{")
		for i := range t.NumField() {
			f := t.Field(i)
			if f.IsExported() || f.Anonymous && f.Type.Kind() == reflect.Struct {
				fmt.Fprintf(&b, "%s %s;", f.Name, shape(f.Type, seen))
			}
		}
		b.WriteString("}")
		return b.String()
	default:
		return t.Kind().String()
	}
}

// encodeRecords appends records in the codec's form.
func encodeRecords[T any](c *codec, b []byte, records []T) []byte {
	b = appendLen(b, len(records), false)
	for i := range records {
		b = c.enc(b, unsafe.Pointer(&records[i]))
	}
	return b
}

// decodeRecords reads what encodeRecords wrote, from s.
func decodeRecords[T any](c *codec, s string) ([]T, error) {
	n, err := countRecords(s)
	if err != nil {
		return nil, err
	}
	records := make([]T, n)
	return records, decodeInto(c, s, records)
}

// countRecords returns how many records encodeRecords wrote to s.
func countRecords(s string) (int, error) {
	d := &decoder{s: s}
	n, _ := d.length(1)
	if d.bad {
		return 0, errSnapshotData
	}
	return n, nil
}

// decodeInto reads what encodeRecords wrote, from s, into dst, which must
// have room for exactly the records written.
func decodeInto[T any](c *codec, s string, dst []T) error {
	return eachRecord(c, s, func(i int) *T {
		if i >= len(dst) {
			return nil
		}
		return &dst[i]
	}, nil)
}

// eachRecord decodes the records of s, the i-th into at(i) (nil: too
// many records), then calls then with it if then is not nil.
func eachRecord[T any](c *codec, s string, at func(i int) *T, then func(*T)) error {
	d := &decoder{s: s}
	n, _ := d.length(1)
	for i := 0; i < n && !d.bad; i++ {
		p := at(i)
		if p == nil {
			return errSnapshotData
		}
		c.dec(d, unsafe.Pointer(p))
		if then != nil && !d.bad {
			then(p)
		}
	}
	if d.bad || d.i != len(d.s) {
		return errSnapshotData
	}
	return nil
}
