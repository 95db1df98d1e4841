package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Deletion vector storage types (PROTOCOL.md §Deletion Vector Descriptor Schema).
const (
	DVStorageUUID   = "u" // <random prefix><20-char Z85 UUID>, file relative to the table root
	DVStorageInline = "i" // Z85-encoded bitmap inside the descriptor
	DVStoragePath   = "p" // absolute path of the DV file
)

// DeletionVectorDescriptor is add/remove.deletionVector.
type DeletionVectorDescriptor struct {
	StorageType    string `json:"storageType"`
	PathOrInlineDv string `json:"pathOrInlineDv"`
	Offset         *int32 `json:"offset,omitempty"`
	SizeInBytes    int32  `json:"sizeInBytes"`
	Cardinality    int64  `json:"cardinality"`
	MaxRowIndex    *int64 `json:"maxRowIndex,omitempty"`
}

// UniqueID is storageType + pathOrInlineDv [+ "@" + offset]; "" for a nil descriptor (no DV).
func (d *DeletionVectorDescriptor) UniqueID() string {
	if d == nil {
		return ""
	}
	id := d.StorageType + d.PathOrInlineDv
	if d.Offset != nil {
		id += "@" + itoa(int64(*d.Offset))
	}
	return id
}

// offset returns the byte offset of the DV record in its file. The protocol says to treat a missing
// offset as 0; byte 0 is the file's format version, so such a descriptor fails the size check.
func (d *DeletionVectorDescriptor) offset() int64 {
	if d.Offset == nil {
		return 0
	}
	return int64(*d.Offset)
}

// StorageKey returns the key, relative to the table root, of the file holding this DV. Inline DVs
// have no file and return an error.
func (d *DeletionVectorDescriptor) StorageKey(tableLocation string) (string, error) {
	switch d.StorageType {
	case DVStorageUUID:
		s := d.PathOrInlineDv
		if len(s) < 20 {
			return "", fmt.Errorf("deletion vector %q: 'u' descriptor shorter than a 20-character Z85 UUID", s)
		}
		prefix, encoded := s[:len(s)-20], s[len(s)-20:]
		raw, err := z85DecodeString(encoded)
		if err != nil {
			return "", fmt.Errorf("deletion vector %q: %w", s, err)
		}
		name := "deletion_vector_" + formatUUID(raw) + ".bin"
		if prefix == "" {
			return name, nil
		}
		// The prefix names a directory under the table root: one or more plain path segments.
		key := prefix + "/" + name
		if strings.HasPrefix(prefix, "/") || path.Clean(key) != key || !utf8.ValidString(prefix) ||
			strings.ContainsFunc(prefix, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return "", fmt.Errorf("deletion vector %q: prefix %q is not a relative directory under the table", s, prefix)
		}
		return key, nil
	case DVStoragePath:
		key, err := ObjectKey(tableLocation, d.PathOrInlineDv)
		if err != nil {
			return "", fmt.Errorf("deletion vector %q: %w", d.PathOrInlineDv, err)
		}
		return key, nil
	case DVStorageInline:
		return "", errors.New("inline deletion vector has no file")
	default:
		return "", fmt.Errorf("deletion vector storage type %q is not defined by the protocol", d.StorageType)
	}
}

func formatUUID(b []byte) string {
	const hex = "0123456789abcdef"
	out := make([]byte, 0, 36)
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out = append(out, '-')
		}
		out = append(out, hex[c>>4], hex[c&0xF])
	}
	return string(out)
}

// LoadDeletionVector reads and decodes the DV of a file into the set of deleted row indexes
// (0-based physical positions in the Parquet file). It verifies the stored size and CRC-32 and
// that the decoded cardinality equals the descriptor's: a DV that does not match its descriptor
// means a corrupt table, and applying it could resurrect or drop rows.
func LoadDeletionVector(ctx context.Context, store storage.Store, d *DeletionVectorDescriptor) (*roaring64.Bitmap, error) {
	if d == nil {
		return roaring64.New(), nil
	}
	var data []byte
	switch d.StorageType {
	case DVStorageInline:
		raw, err := z85DecodeString(d.PathOrInlineDv)
		if err != nil {
			return nil, fmt.Errorf("inline deletion vector: %w: %w", err, ErrCorruptTable)
		}
		if int(d.SizeInBytes) > len(raw) || d.SizeInBytes < 0 {
			return nil, fmt.Errorf("inline deletion vector: sizeInBytes %d exceeds the %d decoded bytes: %w", d.SizeInBytes, len(raw), ErrCorruptTable)
		}
		data = raw[:d.SizeInBytes]
	default:
		key, err := d.StorageKey(store.Location())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", err, ErrCorruptTable)
		}
		data, err = readStoredDV(ctx, store, key, d.offset(), d.SizeInBytes)
		if err != nil {
			return nil, fmt.Errorf("deletion vector %s: %w", d.UniqueID(), err)
		}
	}
	bm, err := DecodeRoaringBitmapArray(data)
	if err != nil {
		return nil, fmt.Errorf("deletion vector %s: %w: %w", d.UniqueID(), err, ErrCorruptTable)
	}
	if got := bm.GetCardinality(); got != uint64(d.Cardinality) {
		return nil, fmt.Errorf("deletion vector %s: bitmap holds %d rows but the log says cardinality %d; the DV file does not match the table log: %w", d.UniqueID(), got, d.Cardinality, ErrCorruptTable)
	}
	return bm, nil
}

// readStoredDV reads one DV record: dataSize (4 bytes, big-endian), the bitmap, its CRC-32 (4
// bytes, big-endian), starting at offset (PROTOCOL.md §Deletion Vector File Storage Format).
func readStoredDV(ctx context.Context, store storage.Store, key string, offset int64, size int32) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("negative sizeInBytes %d: %w", size, ErrCorruptTable)
	}
	r, err := store.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", key, err)
	}
	defer r.Close()
	if end := offset + int64(size) + 8; offset < 0 || end > r.Size() {
		return nil, fmt.Errorf("%s: record [%d, %d) lies outside the %d-byte file: %w", key, offset, end, r.Size(), ErrCorruptTable)
	}
	var version [1]byte
	if _, err := r.ReadAt(version[:], 0); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if version[0] != 1 {
		return nil, fmt.Errorf("%s: unsupported deletion vector file format version %d: %w", key, version[0], ErrCorruptTable)
	}
	buf := make([]byte, int(size)+8)
	if _, err := r.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && len(buf) > 0) {
		return nil, fmt.Errorf("read %s at %d: %w", key, offset, err)
	}
	if stored := binary.BigEndian.Uint32(buf); stored != uint32(size) {
		return nil, fmt.Errorf("%s at %d: stored size %d differs from descriptor sizeInBytes %d: %w", key, offset, stored, size, ErrCorruptTable)
	}
	data := buf[4 : 4+size]
	if want, got := binary.BigEndian.Uint32(buf[4+size:]), crc32.ChecksumIEEE(data); want != got {
		return nil, fmt.Errorf("%s at %d: CRC-32 mismatch (stored %08x, computed %08x): %w", key, offset, want, got, ErrCorruptTable)
	}
	return data, nil
}

// RoaringBitmapArray magic numbers (little-endian int32 at the start of the bitmap bytes).
const (
	roaringPortableMagic = 1681511377
	roaringNativeMagic   = 1681511376
)

// DecodeRoaringBitmapArray decodes Delta's RoaringBitmapArray serialization: the portable format
// (the 64-bit Roaring spec: bucket count, then key + 32-bit bitmap per bucket) or the legacy
// native format (bitmap count, then size-prefixed 32-bit bitmaps whose index is the key).
func DecodeRoaringBitmapArray(data []byte) (*roaring64.Bitmap, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("roaring bitmap array: %d bytes is too short for the magic number", len(data))
	}
	body := data[4:]
	switch binary.LittleEndian.Uint32(data) {
	case roaringPortableMagic:
		return decodePortable(body)
	case roaringNativeMagic:
		return decodeNative(body, binary.LittleEndian)
	}
	// PROTOCOL.md's inline example ("wi5b=0000…", rows 3,4,7,11,18,29) is the native layout with
	// a big-endian header, as early writers produced it. Delta-Spark 3.x refuses it; accepting it
	// is unambiguous (no little-endian header starts with these bytes) and the cardinality check
	// still guards the result.
	if binary.BigEndian.Uint32(data) == roaringNativeMagic {
		return decodeNative(body, binary.BigEndian)
	}
	return nil, fmt.Errorf("roaring bitmap array: unknown magic number %d", binary.LittleEndian.Uint32(data))
}

func decodePortable(body []byte) (*roaring64.Bitmap, error) {
	if len(body) < 8 {
		return nil, errors.New("roaring bitmap array: truncated bucket count")
	}
	n := binary.LittleEndian.Uint64(body)
	// Each bucket needs at least a key and a 32-bit bitmap header; bound n before the library
	// allocates n slots from an untrusted count.
	if n > uint64(len(body)-8)/8 {
		return nil, fmt.Errorf("roaring bitmap array: %d buckets cannot fit in %d bytes", n, len(body))
	}
	rest := body[8:]
	bm := roaring64.New()
	for i := uint64(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, fmt.Errorf("roaring bitmap array: truncated key of bucket %d", i)
		}
		key := binary.LittleEndian.Uint32(rest)
		if key&0x80000000 != 0 {
			return nil, fmt.Errorf("roaring bitmap array: bucket key %d has its most significant bit set", key)
		}
		sub := roaring.New()
		read, err := sub.ReadFrom(bytes.NewReader(rest[4:]))
		if err != nil {
			return nil, fmt.Errorf("roaring bitmap array: bucket %d: %w", i, err)
		}
		rest = rest[4+read:]
		addHigh(bm, key, sub)
	}
	return bm, nil
}

func decodeNative(body []byte, order binary.ByteOrder) (*roaring64.Bitmap, error) {
	if len(body) < 4 {
		return nil, errors.New("roaring bitmap array: truncated bitmap count")
	}
	n := int32(order.Uint32(body))
	if n < 0 || int64(n) > int64(len(body)-4)/4 {
		return nil, fmt.Errorf("roaring bitmap array: invalid bitmap count %d", n)
	}
	rest := body[4:]
	bm := roaring64.New()
	for i := int32(0); i < n; i++ {
		if len(rest) < 4 {
			return nil, fmt.Errorf("roaring bitmap array: truncated size of bitmap %d", i)
		}
		size := order.Uint32(rest)
		if uint64(size) > uint64(len(rest)-4) {
			return nil, fmt.Errorf("roaring bitmap array: bitmap %d of %d bytes overruns the data", i, size)
		}
		sub := roaring.New()
		if _, err := sub.ReadFrom(bytes.NewReader(rest[4 : 4+size])); err != nil {
			return nil, fmt.Errorf("roaring bitmap array: bitmap %d: %w", i, err)
		}
		rest = rest[4+size:]
		addHigh(bm, uint32(i), sub)
	}
	return bm, nil
}

// addHigh adds every value v of sub as key<<32|v.
func addHigh(bm *roaring64.Bitmap, key uint32, sub *roaring.Bitmap) {
	it := sub.ManyIterator()
	buf32 := make([]uint32, 1024)
	buf64 := make([]uint64, 1024)
	for {
		n := it.NextMany(buf32)
		if n == 0 {
			return
		}
		for i := 0; i < n; i++ {
			buf64[i] = uint64(key)<<32 | uint64(buf32[i])
		}
		bm.AddMany(buf64[:n])
	}
}

// EncodeRoaringBitmapArray serialises a bitmap in the portable RoaringBitmapArray format, the one
// every current writer uses.
func EncodeRoaringBitmapArray(bm *roaring64.Bitmap) ([]byte, error) {
	var buf bytes.Buffer
	var magic [4]byte
	binary.LittleEndian.PutUint32(magic[:], roaringPortableMagic)
	buf.Write(magic[:])
	bm.RunOptimize()
	if _, err := bm.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
