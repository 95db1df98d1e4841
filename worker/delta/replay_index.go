package delta

import (
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"
)

// fileIndex finds files by FileKey: an open-addressing table (linear probing) of positions into
// a slice the caller owns (live files, tombstones). It replaces map[FileKey]…: a million-file
// snapshot spends 8-16 bytes per file here instead of ~60, and an insert costs one cache miss
// instead of three, which made the map the largest single cost of loading a checkpoint. Keys are
// not stored: equality is checked on the file at the position, after a 32-bit hash tag matched.
type fileIndex struct {
	seed maphash.Seed
	// slots hold tag<<32 | position+1; 0 is empty. The home slot of an entry is tag & mask, so
	// the table can grow without the keys.
	slots []uint64
	n     int
}

func newFileIndex(seed maphash.Seed, capacity int) fileIndex {
	x := fileIndex{seed: seed}
	x.resize(capacity)
	return x
}

// resize makes room for capacity entries at a load of at most 1/2.
func (x *fileIndex) resize(capacity int) {
	size := 8
	for size < 2*capacity {
		size <<= 1
	}
	if size <= len(x.slots) {
		return
	}
	old := x.slots
	x.slots = make([]uint64, size)
	mask := uint32(size - 1)
	for _, s := range old {
		if s == 0 {
			continue
		}
		i := uint32(s>>32) & mask
		for x.slots[i] != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// hashKey hashes a FileKey.
func (x *fileIndex) hashKey(k FileKey) uint64 { return keyHash(x.seed, k.Path, k.DVID) }

func keyHash(seed maphash.Seed, path, dvID string) uint64 {
	h := maphash.String(seed, path)
	if dvID != "" {
		h ^= bits.RotateLeft64(maphash.String(seed, dvID), 29) * 0x9e3779b97f4a7c15
	}
	return h
}

// fileHash is the hash of the key of a file with this path and DV descriptor.
func fileHash(seed maphash.Seed, path string, dv *DeletionVectorDescriptor) uint64 {
	return keyHash(seed, path, dv.UniqueID())
}

// touch loads the home slot of a hash. Loading the home slots of a batch of keys before
// inserting them lets the CPU fetch their cache lines in parallel instead of one miss at a time.
func (x *fileIndex) touch(h uint64) uint64 {
	return x.slots[uint32(h>>32)&uint32(len(x.slots)-1)]
}

// find looks a hash up; eq tells whether the file at a position has the key. It returns the
// entry's slot and position, or ok=false and the empty slot where the key would go.
func (x *fileIndex) find(h uint64, eq func(pos int) bool) (slot, pos int, ok bool) {
	tag := uint32(h >> 32)
	mask := uint32(len(x.slots) - 1)
	for i := tag & mask; ; i = (i + 1) & mask {
		s := x.slots[i]
		if s == 0 {
			return int(i), 0, false
		}
		if s>>32 == uint64(tag) && eq(int(uint32(s))-1) {
			return int(i), int(uint32(s)) - 1, true
		}
	}
}

// insert adds an entry at the empty slot find returned.
func (x *fileIndex) insert(slot int, h uint64, pos int) {
	x.slots[slot] = h>>32<<32 | uint64(pos+1)
	x.n++
	if 2*x.n > len(x.slots) {
		x.resize(x.n)
	}
}

// delete removes the entry at slot, shifting later entries of its probe run back so that no
// lookup stops early (linear probing needs no tombstones).
func (x *fileIndex) delete(slot int) {
	mask := uint32(len(x.slots) - 1)
	i := uint32(slot)
	for j := (i + 1) & mask; x.slots[j] != 0; j = (j + 1) & mask {
		home := uint32(x.slots[j]>>32) & mask
		// The entry at j may move to i unless its home lies cyclically in (i, j].
		if (j > i && (home <= i || home > j)) || (j < i && home <= i && home > j) {
			x.slots[i] = x.slots[j]
			i = j
		}
	}
	x.slots[i] = 0
	x.n--
}

// remap rewrites every position through m (old position → new), after the slice the positions
// point into was compacted.
func (x *fileIndex) remap(m []int32) {
	for i, s := range x.slots {
		if s != 0 {
			x.slots[i] = s>>32<<32 | uint64(m[uint32(s)-1]+1)
		}
	}
}

// dvIDEquals reports whether id is d.UniqueID() without building it.
func dvIDEquals(d *DeletionVectorDescriptor, id string) bool {
	if d == nil {
		return id == ""
	}
	rest, ok := strings.CutPrefix(id, d.StorageType)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, d.PathOrInlineDv)
	if !ok {
		return false
	}
	if d.Offset == nil {
		return rest == ""
	}
	return rest == "@"+strconv.FormatInt(int64(*d.Offset), 10)
}

// sameDV reports whether two descriptors have the same unique id, as FileKey compares them.
func sameDV(a, b *DeletionVectorDescriptor) bool {
	switch {
	case a == nil && b == nil:
		return true
	case a == nil:
		return dvIDEquals(b, "")
	}
	return dvIDEquals(a, b.UniqueID())
}
