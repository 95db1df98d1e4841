package state

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
)

// Taken is the set of source files a stream has already taken (committed, skipped, planned, or present
// at the first start with includeExistingFiles=false). It holds a 16-byte hash of each key and an
// 8-byte hash of the identity the file had, not the keys themselves, so that a million taken files
// cost 24 MB of memory and of state whatever their names' length. (A collision of two 128-bit key
// hashes among 10^9 keys has a probability below 10^-20.)
type Taken struct {
	sorted []takenEntry       // from the last compaction, ordered by key hash
	recent map[keyHash]uint64 // added since
}

type keyHash [16]byte

type takenEntry struct {
	key   keyHash
	ident uint64
}

// NewTaken returns an empty set.
func NewTaken() *Taken { return &Taken{recent: map[keyHash]uint64{}} }

func hashKey(key string) keyHash {
	sum := sha256.Sum256([]byte(key))
	var h keyHash
	copy(h[:], sum[:16])
	return h
}

func hashIdent(f source.File) uint64 {
	sum := sha256.Sum256([]byte(f.Identity()))
	return binary.LittleEndian.Uint64(sum[:8])
}

// Len is the number of keys in the set.
func (t *Taken) Len() int {
	n := len(t.sorted)
	for k := range t.recent {
		if _, ok := t.find(k); !ok {
			n++
		}
	}
	return n
}

func (t *Taken) find(k keyHash) (uint64, bool) {
	i, ok := slices.BinarySearchFunc(t.sorted, k, func(e takenEntry, k keyHash) int { return bytes.Compare(e.key[:], k[:]) })
	if !ok {
		return 0, false
	}
	return t.sorted[i].ident, true
}

// Contains reports whether f was taken: by key alone, or, with allowOverwrites, by key and identity
// (a file rewritten in place is then new again).
func (t *Taken) Contains(f source.File, allowOverwrites bool) bool {
	k := hashKey(f.Key)
	ident, ok := t.recent[k]
	if !ok {
		ident, ok = t.find(k)
	}
	if !ok {
		return false
	}
	return !allowOverwrites || ident == hashIdent(f)
}

// Add records files as taken (the latest identity of a key wins).
func (t *Taken) Add(files ...source.File) {
	for _, f := range files {
		t.recent[hashKey(f.Key)] = hashIdent(f)
	}
}

// compact folds the recent additions into the sorted part.
func (t *Taken) compact() {
	if len(t.recent) == 0 {
		return
	}
	merged := make([]takenEntry, 0, len(t.sorted)+len(t.recent))
	add := make([]takenEntry, 0, len(t.recent))
	for k, id := range t.recent {
		add = append(add, takenEntry{k, id})
	}
	slices.SortFunc(add, func(a, b takenEntry) int { return bytes.Compare(a.key[:], b.key[:]) })
	i, j := 0, 0
	for i < len(t.sorted) || j < len(add) {
		switch {
		case j == len(add):
			merged = append(merged, t.sorted[i])
			i++
		case i == len(t.sorted):
			merged = append(merged, add[j])
			j++
		default:
			switch c := bytes.Compare(t.sorted[i].key[:], add[j].key[:]); {
			case c < 0:
				merged = append(merged, t.sorted[i])
				i++
			case c > 0:
				merged = append(merged, add[j])
				j++
			default: // the newer identity replaces the older
				merged = append(merged, add[j])
				i++
				j++
			}
		}
	}
	t.sorted, t.recent = merged, map[keyHash]uint64{}
}

// The snapshot format: magic "DKTK", format version (uint16), the batch the snapshot covers up to
// (int64, -1 for the files present at the first start), the largest key seen (length-prefixed), the
// entry count (uint64), the entries ordered by key hash, and a CRC-32C of everything before it.
const (
	takenMagic   = "DKTK"
	takenVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptState is matched by errors for state files that do not decode.
var ErrCorruptState = errors.New("the stream state is corrupt")

// encodeTaken compacts t and renders the snapshot covering batches up to through.
func encodeTaken(t *Taken, through int64, maxKey string) []byte {
	t.compact()
	b := make([]byte, 0, 32+len(maxKey)+24*len(t.sorted))
	b = append(b, takenMagic...)
	b = binary.LittleEndian.AppendUint16(b, takenVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(through))
	b = binary.AppendUvarint(b, uint64(len(maxKey)))
	b = append(b, maxKey...)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(t.sorted)))
	for _, e := range t.sorted {
		b = append(b, e.key[:]...)
		b = binary.LittleEndian.AppendUint64(b, e.ident)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// decodeTaken parses a snapshot.
func decodeTaken(name string, b []byte) (t *Taken, through int64, maxKey string, err error) {
	bad := func(what string) error {
		return fmt.Errorf("taken-files snapshot %s: %s: %w", name, what, ErrCorruptState)
	}
	if len(b) < 4+2+8+1+8+4 || string(b[:4]) != takenMagic {
		return nil, 0, "", bad("not a snapshot (bad magic or too short)")
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return nil, 0, "", bad("checksum mismatch (truncated or damaged)")
	}
	if v := binary.LittleEndian.Uint16(body[4:]); v != takenVersion {
		return nil, 0, "", fmt.Errorf("taken-files snapshot %s has format version %d; this deltakeeper reads version %d: upgrade it", name, v, takenVersion)
	}
	through = int64(binary.LittleEndian.Uint64(body[6:]))
	rest := body[14:]
	n, w := binary.Uvarint(rest)
	if w <= 0 || uint64(len(rest)-w) < n {
		return nil, 0, "", bad("bad key length")
	}
	maxKey, rest = string(rest[w:w+int(n)]), rest[w+int(n):]
	if len(rest) < 8 {
		return nil, 0, "", bad("no entry count")
	}
	count := binary.LittleEndian.Uint64(rest)
	rest = rest[8:]
	if uint64(len(rest)) != count*24 {
		return nil, 0, "", bad(fmt.Sprintf("%d bytes of entries for %d entries", len(rest), count))
	}
	t = &Taken{sorted: make([]takenEntry, count), recent: map[keyHash]uint64{}}
	for i := range t.sorted {
		e := &t.sorted[i]
		copy(e.key[:], rest[i*24:])
		e.ident = binary.LittleEndian.Uint64(rest[i*24+16:])
		if i > 0 && cmp.Compare(string(t.sorted[i-1].key[:]), string(e.key[:])) >= 0 {
			return nil, 0, "", bad("entries out of order")
		}
	}
	return t, through, maxKey, nil
}
