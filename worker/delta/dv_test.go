package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestDeletionVector_UUIDDescriptorResolvesToPrefixedFile(t *testing.T) {
	// Vector from PROTOCOL.md §Deletion Vector Descriptor Schema.
	d := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "ab^-aqEH.-t@S}K{vb[*k^", Offset: ptr(int32(4)), SizeInBytes: 40, Cardinality: 6}
	key, err := d.StorageKey("s3://mytable")
	if err != nil {
		t.Fatal(err)
	}
	if want := "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"; key != want {
		t.Fatalf("key = %q, want %q", key, want)
	}
	if got, want := d.UniqueID(), "uab^-aqEH.-t@S}K{vb[*k^@4"; got != want {
		t.Fatalf("UniqueID = %q, want %q", got, want)
	}
	noPrefix := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: "^-aqEH.-t@S}K{vb[*k^"}
	if key, _ := noPrefix.StorageKey("s3://t"); key != "deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin" {
		t.Fatalf("no-prefix key = %q", key)
	}
}

func TestDeletionVector_InlineDecodesProtocolExample(t *testing.T) {
	d := &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
	bm, err := LoadDeletionVector(context.Background(), nil, d)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bm.ToArray(), []uint64{3, 4, 7, 11, 18, 29}; !slices.Equal(got, want) {
		t.Fatalf("rows = %v, want %v", got, want)
	}
	if d.UniqueID() != "i"+d.PathOrInlineDv {
		t.Fatalf("inline UniqueID has an offset: %q", d.UniqueID())
	}
}

func TestZ85_RoundTripsUnalignedData(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 16, 17} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*37 + 11)
		}
		dec, err := z85DecodeString(z85Encode(data))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(dec[:n], data) {
			t.Fatalf("n=%d: round trip %x != %x", n, dec[:n], data)
		}
	}
	if _, err := z85DecodeString("abc"); err == nil {
		t.Fatal("length not a multiple of 5 accepted")
	}
	if _, err := z85DecodeString("abcd\""); err == nil {
		t.Fatal("invalid character accepted")
	}
}

func TestDecodeRoaringBitmapArray_PortableAndNativeAgree(t *testing.T) {
	values := []uint64{0, 5, 65535, 65536, 1 << 32, 1<<32 + 7, 3<<32 + 1}
	bm := roaring64.BitmapOf(values...)
	portable, err := EncodeRoaringBitmapArray(bm)
	if err != nil {
		t.Fatal(err)
	}
	// Native: count, then size-prefixed 32-bit bitmaps for keys 0..3 (key = index).
	var native bytes.Buffer // writes to a bytes.Buffer cannot fail
	_ = binary.Write(&native, binary.LittleEndian, uint32(roaringNativeMagic))
	_ = binary.Write(&native, binary.LittleEndian, int32(4))
	for key := uint32(0); key < 4; key++ {
		sub := roaring.New()
		for _, v := range values {
			if v>>32 == uint64(key) {
				sub.Add(uint32(v))
			}
		}
		b, _ := sub.ToBytes()
		_ = binary.Write(&native, binary.LittleEndian, uint32(len(b)))
		native.Write(b)
	}
	for name, data := range map[string][]byte{"portable": portable, "native": native.Bytes()} {
		got, err := DecodeRoaringBitmapArray(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !slices.Equal(got.ToArray(), values) {
			t.Fatalf("%s: %v, want %v", name, got.ToArray(), values)
		}
	}
}

func TestDecodeRoaringBitmapArray_RejectsCorruptInput(t *testing.T) {
	cases := map[string][]byte{
		"short":         {1, 2},
		"unknown magic": {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0},
		"huge count":    append(binary.LittleEndian.AppendUint32(nil, roaringPortableMagic), 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F),
		"negative key":  append(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint32(nil, roaringPortableMagic), 1), 0, 0, 0, 0x80, 0, 0, 0, 0),
	}
	for name, data := range cases {
		if _, err := DecodeRoaringBitmapArray(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// storedDVFile builds a DV file holding the given bitmaps, returning the offsets.
func storedDVFile(t *testing.T, bms ...*roaring64.Bitmap) ([]byte, []int32, []int32) {
	file := []byte{1}
	var offsets, sizes []int32
	for _, bm := range bms {
		data, err := EncodeRoaringBitmapArray(bm)
		if err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, int32(len(file)))
		sizes = append(sizes, int32(len(data)))
		file = binary.BigEndian.AppendUint32(file, uint32(len(data)))
		file = append(file, data...)
		file = binary.BigEndian.AppendUint32(file, crc32.ChecksumIEEE(data))
	}
	return file, offsets, sizes
}

func TestLoadDeletionVector_ReadsStoredRecordsAndChecksIntegrity(t *testing.T) {
	ctx := context.Background()
	store := newTestStore(t)
	a, b := roaring64.BitmapOf(1, 2, 3), roaring64.BitmapOf(10, 1<<33)
	file, offsets, sizes := storedDVFile(t, a, b)
	id := "ab" + z85Encode([]byte{0xd2, 0xc6, 0x39, 0xaa, 0x88, 0x16, 0x43, 0x1a, 0xaa, 0xf6, 0xd3, 0xfe, 0x25, 0x12, 0xff, 0x61})
	if err := store.Put(ctx, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", file); err != nil {
		t.Fatal(err)
	}
	for i, want := range []*roaring64.Bitmap{a, b} {
		d := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &offsets[i], SizeInBytes: sizes[i], Cardinality: int64(want.GetCardinality())}
		got, err := LoadDeletionVector(ctx, store, d)
		if err != nil {
			t.Fatalf("dv %d: %v", i, err)
		}
		if !got.Equals(want) {
			t.Fatalf("dv %d: %v, want %v", i, got.ToArray(), want.ToArray())
		}
	}
	bad := []struct {
		name string
		d    DeletionVectorDescriptor
		msg  string
	}{
		{"wrong cardinality", DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 4}, "cardinality"},
		{"wrong size", DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &offsets[0], SizeInBytes: sizes[0] - 1, Cardinality: 3}, "size"},
		{"past end", DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &offsets[1], SizeInBytes: sizes[1] + 100, Cardinality: 2}, "outside"},
	}
	for _, c := range bad {
		if _, err := LoadDeletionVector(ctx, store, &c.d); err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: err = %v, want mention of %q", c.name, err, c.msg)
		}
	}
	corrupt := bytes.Clone(file)
	corrupt[offsets[0]+6] ^= 0xFF
	if err := store.Put(ctx, "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin", corrupt); err != nil {
		t.Fatal(err)
	}
	d := &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: id, Offset: &offsets[0], SizeInBytes: sizes[0], Cardinality: 3}
	if _, err := LoadDeletionVector(ctx, store, d); err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Fatalf("corrupt bitmap: err = %v, want CRC mismatch", err)
	}
}

func newTestStore(t testing.TB) storage.Store {
	t.Helper()
	s, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
