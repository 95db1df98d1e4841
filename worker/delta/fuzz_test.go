package delta

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Fuzz targets of the log's decoders. Seeds come from the conformance tables (fuzz_seeds_test.go)
// plus a few hand-written edge cases; `go test` runs the seeds, hack/fuzz.sh (make fuzz) fuzzes.

// FuzzParseActions: a commit file either decodes, and its actions encode to JSON that decodes and
// encodes again to the same bytes, or is refused as corruption naming the file; never a panic or
// another error.
func FuzzParseActions(f *testing.F) {
	for _, c := range loadConformanceSeeds(f).commits {
		f.Add(c)
	}
	for _, s := range []string{"", "\n", "{}", "[]", "null", `{"add":{"path":"a","size":-1}}`, "{\"commitInfo\":{}}\n{\"add\":", "\xff"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		actions, err := parseActions("k.json", data)
		if err != nil {
			if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), "k.json") {
				t.Fatalf("error is not corruption naming the file: %v", err)
			}
			return
		}
		var lines []string
		var kept []*Action
		for _, a := range actions {
			if a.CommitInfo != nil {
				continue // kept as raw JSON with fields reassembled; FuzzScanner covers it
			}
			line, err := json.Marshal(a)
			if err != nil {
				t.Fatalf("encode %+v: %v", a, err)
			}
			lines, kept = append(lines, string(line)), append(kept, a)
		}
		if len(lines) == 0 {
			return
		}
		// Encoding normalizes (defaults filled in, key case fixed): decoding what was encoded and
		// encoding again must give the same bytes, and the same number of actions.
		back, err := parseActions("k.json", []byte(strings.Join(lines, "\n")))
		if err != nil {
			t.Fatalf("re-encoded actions do not decode: %v\n%s", err, strings.Join(lines, "\n"))
		}
		if len(back) != len(kept) {
			t.Fatalf("%d actions re-encoded, %d decoded back", len(kept), len(back))
		}
		for i, a := range back {
			again, err := json.Marshal(a)
			if err != nil || string(again) != lines[i] {
				t.Fatalf("round trip is not stable (%v):\n%s\n%s", err, lines[i], again)
			}
		}
	})
}

// fuzzStatsSchema has a column of every kind statistics carry.
var fuzzStatsSchema = &types.StructType{Fields: []*types.StructField{
	{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
	{Name: "k", Type: types.Primitive(types.TypeInteger), Nullable: true},
	{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true},
	{Name: "d", Type: types.Primitive(types.TypeDate), Nullable: true},
	{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
	{Name: "x", Type: types.Primitive(types.TypeDouble), Nullable: true},
	{Name: "b", Type: types.Primitive(types.TypeBoolean), Nullable: true},
	{Name: "n", Type: &types.StructType{Fields: []*types.StructField{{Name: "y", Type: types.Primitive(types.TypeLong), Nullable: true}}}, Nullable: true},
}}

// FuzzParseStats: ParseStats never panics; when it decodes, the fast numRecords reader agrees
// with it, and every statistic it keeps has its column's type.
func FuzzParseStats(f *testing.F) {
	for _, s := range loadConformanceSeeds(f).stats {
		f.Add(s)
	}
	for _, s := range []string{`{"numRecords":3,"minValues":{"id":1,"s":"a","d":"2024-01-01","ts":"2024-01-01T00:00:00.000Z","x":1.5,"n":{"y":2}},"maxValues":{"id":9,"b":true},"nullCount":{"id":0,"n":{"y":1}}}`,
		`{"numRecords":-1}`, `{"numRecords":1e3}`, `{"minValues":{"id":"x"}}`, `{"numRecords":5,`, `[]`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stats string) {
		st, err := ParseStats(stats, fuzzStatsSchema, ColumnMappingNone)
		if err != nil {
			return
		}
		n, ok := NumRecords(stats)
		if st.NumRecords == nil && ok || st.NumRecords != nil && (!ok || n != *st.NumRecords) {
			t.Fatalf("NumRecords = %d, %v; ParseStats says %v", n, ok, st.NumRecords)
		}
		for _, c := range st.Columns {
			for _, v := range []types.Value{c.Min, c.Max} {
				if v != nil && !valueFits(v, c.Type) {
					t.Fatalf("column %v of type %s kept a %T statistic %v", c.Path, c.Type, v, v)
				}
			}
			if c.NullCount != nil && *c.NullCount < 0 {
				t.Logf("column %v: negative null count %d kept", c.Path, *c.NullCount)
			}
		}
	})
}

// valueFits reports whether a statistic's Go type is the one its column's type decodes to.
func valueFits(v types.Value, t types.DataType) bool {
	p, ok := t.(*types.PrimitiveType)
	if !ok {
		return false
	}
	switch v.(type) {
	case int64:
		return p.Name == types.TypeLong
	case int32:
		return p.Name == types.TypeInteger || p.Name == types.TypeDate
	case string:
		return p.Name == types.TypeString
	case float64:
		return p.Name == types.TypeDouble
	case bool:
		return p.Name == types.TypeBoolean
	case types.Timestamp:
		return p.Name == types.TypeTimestamp
	}
	return true // other representations (dates, decimals) are checked by their own tests
}

// fuzzPartitionTypes are the column types partition values are fuzzed against.
var fuzzPartitionTypes = []string{types.TypeString, types.TypeLong, types.TypeInteger, types.TypeShort, types.TypeByte,
	types.TypeBoolean, types.TypeDate, types.TypeTimestamp, types.TypeTimestampNTZ, types.TypeDouble, types.TypeFloat,
	"decimal(12,2)", "decimal(38,0)", types.TypeBinary}

// FuzzPartitionValue: a serialized partition value that parses formats back to a value that
// parses to the same thing (serialization round trip); parsing never panics.
func FuzzPartitionValue(f *testing.F) {
	index := map[string]uint8{}
	for i, name := range fuzzPartitionTypes {
		index[name] = uint8(i)
	}
	for _, s := range loadConformanceSeeds(f).partitions {
		if i, ok := index[s.typeName]; ok {
			f.Add(i, s.value)
		}
	}
	for i := range fuzzPartitionTypes {
		for _, v := range []string{"0", "-1", "2024-02-29", "2024-01-01 00:00:00", "2024-01-01T00:00:00.123456Z", "NaN", "-Infinity", "1.50", "true", "\u00e9"} {
			f.Add(uint8(i), v)
		}
	}
	f.Fuzz(func(t *testing.T, typeIndex uint8, value string) {
		name := fuzzPartitionTypes[int(typeIndex)%len(fuzzPartitionTypes)]
		typ := fuzzType(name)
		v, err := ParsePartitionValue(typ, PartitionValue{Column: "c", Value: value})
		if err != nil || v == nil {
			return
		}
		pv, err := FormatPartitionValue("c", v)
		if err != nil {
			t.Fatalf("%s %q parsed to %#v, which does not format: %v", name, value, v, err)
		}
		back, err := ParsePartitionValue(typ, pv)
		if err != nil {
			t.Fatalf("%s %q: formatted as %q, which does not parse: %v", name, value, pv.Value, err)
		}
		if !samePartitionValue(v, back) {
			t.Fatalf("%s %q: parsed %#v, formatted %q, parsed back %#v", name, value, v, pv.Value, back)
		}
	})
}

func samePartitionValue(a, b types.Value) bool {
	if x, ok := a.(float64); ok {
		if y, ok := b.(float64); ok && math.IsNaN(x) && math.IsNaN(y) {
			return true
		}
	}
	if x, ok := a.(float32); ok {
		if y, ok := b.(float32); ok && math.IsNaN(float64(x)) && math.IsNaN(float64(y)) {
			return true
		}
	}
	return reflect.DeepEqual(a, b)
}

// FuzzRoaringBitmapArray: a bitmap that decodes encodes to bytes that decode to the same rows.
func FuzzRoaringBitmapArray(f *testing.F) {
	seeds := loadConformanceSeeds(f)
	for _, d := range seeds.dvs {
		if d.StorageType == DVStorageInline {
			if raw, err := z85DecodeString(d.PathOrInlineDv); err == nil && int(d.SizeInBytes) <= len(raw) {
				f.Add(raw[:d.SizeInBytes])
			}
		}
	}
	for _, path := range testutil.ConformanceFiles(f, func(p string) bool { return strings.HasPrefix(baseName(p), "deletion_vector_") }) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		// Records follow the version byte: size (4 bytes, big-endian), bitmap, CRC-32.
		for off := 1; off+4 <= len(data); {
			n := int(binary.BigEndian.Uint32(data[off:]))
			if n <= 0 || off+4+n+4 > len(data) {
				break
			}
			f.Add(data[off+4 : off+4+n])
			off += 4 + n + 4
		}
	}
	f.Add([]byte{})
	f.Add([]byte{0x64, 0x1e, 0x5d, 0x0a, 0, 0, 0, 0}) // portable magic, no buckets
	f.Fuzz(func(t *testing.T, data []byte) {
		bm, err := DecodeRoaringBitmapArray(data)
		if err != nil {
			return
		}
		enc, err := EncodeRoaringBitmapArray(bm)
		if err != nil {
			t.Fatalf("a decoded bitmap (%d rows) does not encode: %v", bm.GetCardinality(), err)
		}
		back, err := DecodeRoaringBitmapArray(enc)
		if err != nil || !back.Equals(bm) {
			t.Fatalf("round trip: %v; %d rows became %v", err, bm.GetCardinality(), back)
		}
	})
}

func baseName(p string) string { return p[strings.LastIndexByte(p, '/')+1:] }

// FuzzDeletionVectorDescriptor: the snapshot's descriptor check and the loader agree: a
// descriptor the check refuses never loads, one it accepts loads or fails as corruption (of the
// log or of the DV file, or a key no object can have) or a missing file, never with a panic or
// another error.
func FuzzDeletionVectorDescriptor(f *testing.F) {
	for _, d := range loadConformanceSeeds(f).dvs {
		var off int32
		if d.Offset != nil {
			off = *d.Offset
		}
		f.Add(d.StorageType, d.PathOrInlineDv, off, d.Offset != nil, d.SizeInBytes, d.Cardinality)
	}
	f.Add("i", "0000000000", int32(0), false, int32(8), int64(1))
	f.Add("u", "ab^-aqEH.-t@S}K{vb[*k^", int32(1), true, int32(34), int64(-1))
	f.Add("p", "s3://elsewhere/dv.bin", int32(1), true, int32(34), int64(2))
	f.Add("q", "", int32(-1), true, int32(-1), int64(0))
	store, err := storage.NewLocal(f.TempDir())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, storageType, pathOrInline string, offset int32, hasOffset bool, size int32, cardinality int64) {
		d := &DeletionVectorDescriptor{StorageType: storageType, PathOrInlineDv: pathOrInline, SizeInBytes: size, Cardinality: cardinality}
		if hasOffset {
			d.Offset = &offset
		}
		checkErr := checkDVDescriptor(d)
		bm, loadErr := LoadDeletionVector(context.Background(), store, d)
		if loadErr != nil && !errors.Is(loadErr, ErrCorruptTable) && !errors.Is(loadErr, storage.ErrNotFound) &&
			!errors.Is(loadErr, storage.ErrInvalidKey) {
			t.Fatalf("%+v: load error is neither corruption nor a missing file: %v", d, loadErr)
		}
		if checkErr != nil && loadErr == nil {
			t.Fatalf("%+v: the snapshot refuses it (%v) but it loads (%d rows)", d, checkErr, bm.GetCardinality())
		}
		if loadErr == nil && bm.GetCardinality() != uint64(cardinality) {
			t.Fatalf("%+v: loaded %d rows", d, bm.GetCardinality())
		}
	})
}

// FuzzCheckpoint: a checkpoint Parquet file with any bytes either loads or is refused as
// corruption or as an unsupported table; never a panic, a hang or a storage error. Seeds are the
// small checkpoints of the conformance tables, which the fuzzer mutates.
func FuzzCheckpoint(f *testing.F) {
	n := 0
	for _, path := range testutil.ConformanceFiles(f, func(p string) bool {
		return strings.HasSuffix(p, ".checkpoint.parquet") && strings.Contains(p, "/_delta_log/")
	}) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) <= 24<<10 && n < 8 {
			f.Add(data)
			f.Add(data[:len(data)/2])
			n++
		}
	}
	if n == 0 {
		f.Fatal("no small checkpoint among the conformance tables")
	}
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		store, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzHang)
		defer cancel()
		if err := store.Put(ctx, ClassicCheckpointKey(0), bytes.Clone(data)); err != nil {
			t.Fatal(err)
		}
		snap, err := NewTable(store).Latest(ctx)
		switch {
		case ctx.Err() != nil:
			t.Fatalf("loading a %d-byte checkpoint did not finish within %s", len(data), fuzzHang)
		case err == nil:
			if snap.Version() != 0 || snap.NumFiles() < 0 {
				t.Fatalf("loaded version %d with %d files", snap.Version(), snap.NumFiles())
			}
		case !isRefusal(err):
			t.Fatalf("a broken checkpoint gives an error that is neither corruption nor unsupported: %v", err)
		}
	})
}

func fuzzType(name string) types.DataType {
	var p, sc int
	if n, _ := fmt.Sscanf(name, "decimal(%d,%d)", &p, &sc); n == 2 {
		return types.Decimal(p, sc)
	}
	return types.Primitive(name)
}

// fuzzHang bounds one input's load: far more than any seed takes, so only a hang reaches it.
const fuzzHang = 20 * time.Second

// isRefusal reports whether err is one of the errors a broken table may give: corruption of the
// log, a checkpoint or a Parquet file, or a protocol deltakeeper does not support.
func isRefusal(err error) bool {
	var vnf *VersionNotFoundError
	return errors.Is(err, ErrCorruptTable) || errors.Is(err, parquetio.ErrCorruptFile) || errors.Is(err, ErrUnsupportedTable) ||
		errors.Is(err, ErrIncompleteLog) || errors.Is(err, ErrLogGap) || errors.As(err, &vnf) && vnf.Earliest == NoVersion
}
