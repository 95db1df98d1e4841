package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"math"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// DeletionVectorsEnabled reports whether a DML commit may write new deletion vectors: the table has
// the deletionVectors writer feature and delta.enableDeletionVectors=true (PROTOCOL.md §Deletion
// Vectors: "a new DV may only be written when the property is set").
func (s *Snapshot) DeletionVectorsEnabled() bool {
	return s.protocol.HasWriterFeature(FeatureDeletionVectors) && s.props.flag(PropEnableDeletionVectors)
}

// InlineDeletionVector describes bm stored in the log itself (storageType "i": the
// RoaringBitmapArray Z85-encoded, sizeInBytes its length before encoding).
func InlineDeletionVector(bm *roaring64.Bitmap) (*DeletionVectorDescriptor, error) {
	data, err := EncodeRoaringBitmapArray(bm)
	if err != nil {
		return nil, fmt.Errorf("encode deletion vector: %w", err)
	}
	return &DeletionVectorDescriptor{
		StorageType: DVStorageInline, PathOrInlineDv: z85Encode(data),
		SizeInBytes: int32(len(data)), Cardinality: int64(bm.GetCardinality()), MaxRowIndex: maxRowIndex(bm),
	}, nil
}

func maxRowIndex(bm *roaring64.Bitmap) *int64 {
	if bm.IsEmpty() {
		return nil
	}
	return ptr(int64(bm.Maximum()))
}

// DVFile collects the deletion vectors of one commit into one DV file, as Spark does
// (PROTOCOL.md §Deletion Vector File Storage Format): a format-version byte 1, then for each DV its
// size (4 bytes, big-endian), its RoaringBitmapArray and the CRC-32 of those bytes (big-endian).
// The file sits in the table root as deletion_vector_<uuid>.bin and the descriptors name it by the
// Z85 form of the UUID with no prefix ("u"), each with the offset of its record. Not safe for
// concurrent use.
type DVFile struct {
	id  uuid.UUID
	buf bytes.Buffer
	n   int
}

// NewDVFile starts an empty DV file with a fresh random UUID.
func NewDVFile() *DVFile {
	f := &DVFile{id: uuid.New()}
	f.buf.WriteByte(1)
	return f
}

// Key is the file's storage key relative to the table root.
func (f *DVFile) Key() string { return "deletion_vector_" + f.id.String() + ".bin" }

// Len is the number of DVs added.
func (f *DVFile) Len() int { return f.n }

// Size is the file's size in bytes so far.
func (f *DVFile) Size() int64 { return int64(f.buf.Len()) }

// Add appends bm and returns its descriptor (valid once Write succeeded).
func (f *DVFile) Add(bm *roaring64.Bitmap) (*DeletionVectorDescriptor, error) {
	data, err := EncodeRoaringBitmapArray(bm)
	if err != nil {
		return nil, fmt.Errorf("encode deletion vector: %w", err)
	}
	offset := f.buf.Len()
	// Offsets and sizes are int32 in the descriptor; the record must end inside that range.
	if int64(offset)+int64(len(data))+8 > math.MaxInt32 {
		return nil, fmt.Errorf("deletion vector file %s would exceed the 2 GiB that descriptor offsets can address; delete from fewer files per commit", f.Key())
	}
	var word [4]byte
	binary.BigEndian.PutUint32(word[:], uint32(len(data)))
	f.buf.Write(word[:])
	f.buf.Write(data)
	binary.BigEndian.PutUint32(word[:], crc32.ChecksumIEEE(data))
	f.buf.Write(word[:])
	f.n++
	off := int32(offset)
	return &DeletionVectorDescriptor{
		StorageType: DVStorageUUID, PathOrInlineDv: z85Encode(f.id[:]), Offset: &off,
		SizeInBytes: int32(len(data)), Cardinality: int64(bm.GetCardinality()), MaxRowIndex: maxRowIndex(bm),
	}, nil
}

// Write stores the file with PutIfAbsent: a DV file is never overwritten, so a UUID collision (or a
// retry of a write that did land) fails instead of changing DVs another commit may reference.
func (f *DVFile) Write(ctx context.Context, store storage.Store) error {
	if err := store.PutIfAbsent(ctx, f.Key(), f.buf.Bytes()); err != nil {
		if errors.Is(err, storage.ErrAlreadyExists) {
			return fmt.Errorf("deletion vector file %s already exists; retry the operation (a new file gets a new UUID): %w", f.Key(), err)
		}
		return fmt.Errorf("write deletion vector file %s: %w", f.Key(), err)
	}
	return nil
}

// WithWideBounds returns a copy of a whose statistics say tightBounds=false: once a DV hides some of
// a file's rows, its min/max are only bounds of the remaining rows and its null counts are not exact
// (PROTOCOL.md §Per-file Statistics), which Spark records the same way when it adds a DV.
// numRecords stays the physical row count. Files without statistics are returned unchanged.
func (a *AddFile) WithWideBounds() (*AddFile, error) {
	c := *a
	if a.Stats == "" {
		return &c, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(a.Stats), &fields); err != nil {
		return nil, fmt.Errorf("file %s: statistics are not valid JSON: %w", a.Path, err)
	}
	fields["tightBounds"] = json.RawMessage("false")
	var b []byte
	b = append(b, '{')
	if n, ok := fields["numRecords"]; ok {
		// numRecords first, as every writer puts it, so that NumRecords takes its fast path.
		b = append(append(b, `"numRecords":`...), n...)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k == "numRecords" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(k)
		b = append(append(append(b, name...), ':'), fields[k]...)
	}
	c.Stats = string(append(b, '}'))
	return &c, nil
}
