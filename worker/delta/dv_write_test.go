package delta

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestDVFile_RecordsAtOffsetsReadBackAndNeverOverwritten(t *testing.T) {
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := NewDVFile()
	a, b := roaring64.BitmapOf(0, 7, 1<<33), roaring64.New()
	b.AddRange(100, 5000)
	da, err := f.Add(a)
	if err != nil {
		t.Fatal(err)
	}
	db, err := f.Add(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Write(t.Context(), store); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^deletion_vector_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.bin$`).MatchString(f.Key()) {
		t.Fatalf("key %s", f.Key())
	}
	// Byte 0 is the format version; each record is 4 bytes of size, the bitmap, 4 bytes of CRC.
	if *da.Offset != 1 || *db.Offset != 1+4+da.SizeInBytes+4 || f.Size() != int64(*db.Offset+4+db.SizeInBytes+4) {
		t.Fatalf("offsets %d, %d, size %d", *da.Offset, *db.Offset, f.Size())
	}
	for _, c := range []struct {
		d    *DeletionVectorDescriptor
		want *roaring64.Bitmap
	}{{da, a}, {db, b}} {
		if key, err := c.d.StorageKey(store.Location()); err != nil || key != f.Key() {
			t.Fatalf("descriptor names %q (%v), want %s", key, err, f.Key())
		}
		got, err := LoadDeletionVector(t.Context(), store, c.d)
		if err != nil || !got.Equals(c.want) || c.d.Cardinality != int64(c.want.GetCardinality()) || *c.d.MaxRowIndex != int64(c.want.Maximum()) {
			t.Fatalf("read back %v (%v), descriptor %+v", got, err, c.d)
		}
	}
	if err := f.Write(t.Context(), store); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("second write: %v, want ErrAlreadyExists", err)
	}
	inline, err := InlineDeletionVector(a)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := LoadDeletionVector(t.Context(), store, inline); err != nil || !got.Equals(a) || inline.Offset != nil {
		t.Fatalf("inline %+v read back %v (%v)", inline, got, err)
	}
}

func TestWithWideBounds_KeepsEveryStatisticAndTheRowCountFirst(t *testing.T) {
	const stats = `{"numRecords":10,"minValues":{"a":1},"maxValues":{"a":9},"nullCount":{"a":0},"tightBounds":true}`
	a := &AddFile{Path: "x.parquet", Stats: stats}
	w, err := a.WithWideBounds()
	if err != nil {
		t.Fatal(err)
	}
	var got, want map[string]any
	_ = json.Unmarshal([]byte(w.Stats), &got)
	_ = json.Unmarshal([]byte(a.Stats), &want)
	want["tightBounds"] = false
	if n, ok := leadingNumRecords(w.Stats); !ok || n != 10 || len(got) != len(want) || got["tightBounds"] != false {
		t.Fatalf("stats %s", w.Stats)
	}
	for _, k := range []string{"minValues", "maxValues", "nullCount"} {
		if g, _ := json.Marshal(got[k]); string(g) != mustJSON(want[k]) {
			t.Errorf("%s changed: %s", k, g)
		}
	}
	if a.Stats != stats {
		t.Fatal("the original was modified")
	}
	if e, err := (&AddFile{}).WithWideBounds(); err != nil || e.Stats != "" {
		t.Fatalf("no statistics: %q %v", e.Stats, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
