package storedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/feedpipe/feedpipe/pkg/ndjson"
)

// RawStorage is the BlobRef.Storage of payloads in this store.
const RawStorage = "localfs"

// PutRaw stores a payload exactly as served, zstd-compressed and addressed
// by its SHA-256, under the day of at: raw/YYYY-MM-DD/<sha256>.zst. The
// same payload on the same day is stored once. It returns the key and the
// hex SHA-256 of body. The file is written but not synced: AppendFetches
// syncs the store before it writes the records that point at payloads, one
// sync for a whole batch instead of two per payload.
func (s *Store) PutRaw(at time.Time, body []byte) (key, sum string, err error) {
	return s.putRaw(at, body, func(string) bool { return true })
}

// PutNewRaw is PutRaw for a payload that is most likely not stored yet:
// unless its SHA-256 is last (the previous payload of the same source, as
// the caller knows it), it does not look for a stored copy before it
// compresses and writes the payload, which saves a file-system lookup on
// every fetch that brings something new. A copy that is there all the
// same is kept as it is, so the outcome is PutRaw's.
func (s *Store) PutNewRaw(at time.Time, body []byte, last string) (key, sum string, err error) {
	return s.putRaw(at, body, func(sum string) bool { return sum == last })
}

func (s *Store) putRaw(at time.Time, body []byte, look func(sum string) bool) (key, sum string, err error) {
	digest := sha256.Sum256(body)
	sum = hex.EncodeToString(digest[:])
	key = DirRaw + "/" + Day(at) + "/" + sum + ".zst"
	if look(sum) {
		if _, err := s.root.Stat(key); err == nil {
			return key, sum, nil
		}
	}
	enc, _, err := s.codecs()
	if err != nil {
		return "", "", fmt.Errorf("store: zstd: %w", err)
	}
	buf := rawBuffers.Get().(*[]byte)
	defer func() {
		if cap(*buf) <= maxPooledRaw {
			rawBuffers.Put(buf)
		}
	}()
	*buf = enc.EncodeAll(body, (*buf)[:0])
	if err := s.writeNew(key, *buf); err != nil {
		return "", "", err
	}
	return key, sum, nil
}

// PutRawEncoded stores at key a payload compressed already, such as one
// carried from another store's raw/ (feed-bus take): the caller has
// checked that it decodes to a body whose SHA-256 the key names, so that
// the file is what PutRaw would have stored, without compressing it
// again. A payload stored at key already is kept.
func (s *Store) PutRawEncoded(key string, compressed []byte) error {
	if !ndjson.IsRawKey(key) {
		return fmt.Errorf("store: %q is not the key of a payload (raw/YYYY-MM-DD/<sha256>.zst): %w", key, ErrBadKey)
	}
	if _, err := s.root.Stat(key); err == nil {
		return nil
	}
	return s.writeNew(key, compressed)
}

// rawBuffers hold compressed payloads on their way to a file; one of at
// most maxPooledRaw bytes is kept for the next.
var rawBuffers = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledRaw = 256 << 10

// ErrRawTooLarge is returned by GetRaw for a payload over the caller's cap.
var ErrRawTooLarge = errors.New("payload over the size limit")

// GetRaw returns the payload stored at key, refusing one that decodes to
// more than max bytes (0 = no limit beyond the decoder's 1 GiB). key must
// have the shape PutRaw gives it (ndjson.IsRawKey).
func (s *Store) GetRaw(key string, max int64) ([]byte, error) {
	if !ndjson.IsRawKey(key) {
		return nil, fmt.Errorf("store: %q is not the key of a payload (raw/YYYY-MM-DD/<sha256>.zst): %w", key, ErrBadKey)
	}
	compressed, err := s.root.ReadFile(key)
	if err != nil {
		return nil, fmt.Errorf("store: read payload %s: %w", key, unwrapPathError(err))
	}
	return s.decodeRaw(key, compressed, max)
}

// GetRawFile is GetRaw for a payload file named by its path, for replaying
// payloads copied out of a store: a path the user gave, not a key.
func (s *Store) GetRawFile(path string, max int64) ([]byte, error) {
	compressed, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("store: read payload %s: %w", path, unwrapPathError(err))
	}
	return s.decodeRaw(path, compressed, max)
}

func (s *Store) decodeRaw(key string, compressed []byte, max int64) ([]byte, error) {
	_, dec, err := s.codecs()
	if err != nil {
		return nil, fmt.Errorf("store: zstd: %w", err)
	}
	body, err := dec.DecodeAll(compressed, nil)
	if err != nil {
		return nil, fmt.Errorf("store: decode payload %s: %w", key, err)
	}
	if max > 0 && int64(len(body)) > max {
		return nil, fmt.Errorf("store: payload %s: %w (%d > %d bytes)", key, ErrRawTooLarge, len(body), max)
	}
	return body, nil
}
