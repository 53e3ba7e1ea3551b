package ndjson

import (
	"fmt"

	json1 "github.com/go-json-experiment/json/v1"
	gojson "github.com/goccy/go-json"
)

// Unmarshal decodes one record, or any JSON value, into v with exactly the
// rules of encoding/json. Records cross four processes, and their decoding
// was a tenth to a fifth of feed-store's and feed-dedup's CPU, so it takes
// two decoders, each faster than encoding/json and each checked against
// it by FuzzUnmarshal:
//
//   - github.com/goccy/go-json first: 2.5 times the speed of the next on a
//     fetch record, 3 times on an entry line (BenchmarkUnmarshal).
//   - github.com/go-json-experiment/json (the implementation behind Go's
//     encoding/json/v2) in its v1 mode, when the first refuses the input
//     or panics: its error says what is wrong as encoding/json would, and
//     an input only the first refuses is still read. It writes over what
//     the first left in v, as encoding/json over a value decoded before.
func Unmarshal(data []byte, v any) error {
	if fastUnmarshal(data, v) == nil {
		return nil
	}
	return json1.Unmarshal(data, v)
}

// fastUnmarshal is goccy/go-json's Unmarshal, a panic made an error:
// input is untrusted, and the reference decoder then reads it.
func fastUnmarshal(data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("json: %v", r)
		}
	}()
	return gojson.Unmarshal(data, v)
}

// valid reports whether data is one JSON value, as encoding/json.Valid does
// (invalid UTF-8 and repeated names are allowed), in a quarter of its time.
func valid(data []byte) bool { return json1.Valid(data) }
