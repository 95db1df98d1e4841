package delta

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func prim(name string) types.DataType { return types.Primitive(name) }

func TestTruncateMaxString_StaysAnUpperBound(t *testing.T) {
	long := strings.Repeat("a", 40)
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"short", "short", true},
		{strings.Repeat("x", 32), strings.Repeat("x", 32), true},
		{long, strings.Repeat("a", 32) + "\x7f", true},
		{strings.Repeat("a", 32) + "é" + "zz", strings.Repeat("a", 32) + "\U0010FFFF", true},
		{strings.Repeat("a", 32) + "\x7f" + "z", strings.Repeat("a", 32) + "\U0010FFFF", true},
		// U+10FFFF at the cut point cannot be exceeded: the cut moves past it.
		{strings.Repeat("a", 32) + "\U0010FFFF" + "b" + "c", strings.Repeat("a", 32) + "\U0010FFFF" + "\x7f", true},
		{strings.Repeat("\U0010FFFF", 70), "", false},
	}
	for _, c := range cases {
		got, ok := truncateMaxString(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("truncateMaxString(%q) = %q %v, want %q %v", c.in, got, ok, c.want, c.ok)
			continue
		}
		if ok && got < c.in {
			t.Errorf("%q is not an upper bound of %q", got, c.in)
		}
	}
	// Exhaustive-ish check over supplementary characters at the cut point, where Spark's U+FFFD
	// tie-breaker fails byte-wise.
	for _, r := range []rune{'z', 0x7e, 0x80, 0x7ff, 0xfffd, 0xffff, 0x1f600, 0x10fffe} {
		s := strings.Repeat("b", 32) + string(r) + "tail"
		got, ok := truncateMaxString(s)
		if !ok || got < s || !utf8.ValidString(got) {
			t.Errorf("cut before %U: %q (ok=%v) is not a valid upper bound of %q", r, got, ok, s)
		}
	}
	if got := truncateMin(strings.Repeat("é", 40)).(string); utf8.RuneCountInString(got) != 32 {
		t.Errorf("min prefix has %d characters", utf8.RuneCountInString(got))
	}
}

func statsTestSnapshot(t *testing.T, props map[string]string, schema *types.StructType, parts ...string) *Snapshot {
	b := testTable(t).Schema(schema).Partitioned(parts...)
	for k, v := range props {
		b.Prop(k, v)
	}
	_, snap := b.Create()
	return snap
}

func TestBuildStats_ShapesStatisticsLikeSpark(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: prim("long"), Nullable: true},
		{Name: "s", Type: prim("string"), Nullable: true},
		{Name: "flag", Type: prim("boolean"), Nullable: true},
		{Name: "ts", Type: prim("timestamp"), Nullable: true},
		{Name: "nested", Type: &types.StructType{Fields: []*types.StructField{
			{Name: "d", Type: types.Decimal(10, 2), Nullable: true},
			{Name: "day", Type: prim("date"), Nullable: true},
		}}, Nullable: true},
		{Name: "tags", Type: &types.ArrayType{ElementType: prim("string"), ContainsNull: true}, Nullable: true},
		{Name: "part", Type: prim("string"), Nullable: true},
	}}
	snap := statsTestSnapshot(t, nil, schema, "part")
	cols := []parquetio.ColumnStats{
		{Path: []string{"id"}, Min: int64(-5), Max: int64(99), NullCount: 1},
		{Path: []string{"s"}, Min: "apple", Max: strings.Repeat("z", 40), NullCount: 0},
		{Path: []string{"flag"}, Min: false, Max: true, NullCount: 2},
		{Path: []string{"ts"}, Min: types.Timestamp(1_631_099_471_123_456), Max: types.Timestamp(1_631_099_471_999_999), NullCount: 0},
		{Path: []string{"nested", "d"}, Min: types.DecimalValue{Unscaled: big.NewInt(-150), Scale: 2}, Max: types.DecimalValue{Unscaled: big.NewInt(12345), Scale: 2}, NullCount: 3},
		{Path: []string{"nested", "day"}, Min: types.Date(0), Max: types.Date(18878), NullCount: 0},
		{Path: []string{"tags", "list", "element"}, Min: "a", Max: "b", NullCount: 7},
	}
	got, err := snap.BuildStats(10, cols)
	must(t, err)
	want := `{"numRecords":10,` +
		`"minValues":{"id":-5,"s":"apple","ts":"2021-09-08T11:11:11.123Z","nested":{"d":-1.50,"day":"1970-01-01"}},` +
		`"maxValues":{"id":99,"s":"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz` + "\x7f" + `","ts":"2021-09-08T11:11:11.999Z","nested":{"d":123.45,"day":"2021-09-08"}},` +
		`"nullCount":{"id":1,"s":0,"flag":2,"ts":0,"nested":{"d":3,"day":0}}}`
	if got != want {
		t.Fatalf("stats\n got %s\nwant %s", got, want)
	}
	parsed, err := ParseStats(got, snap.Schema(), snap.ColumnMappingMode())
	must(t, err)
	ts, _ := parsed.Column("ts")
	if ts.MaxUpperBound().(types.Timestamp) < types.Timestamp(1_631_099_471_999_999) {
		t.Fatalf("timestamp max upper bound %v is below the true max", ts.MaxUpperBound())
	}
	d, _ := parsed.Column("nested", "d")
	if d.Min.(types.DecimalValue).String() != "-1.50" || *d.NullCount != 3 {
		t.Fatalf("decimal stats %+v", d)
	}
}

func TestBuildStats_HonoursIndexedColumnsMappingAndDVs(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "a", Type: prim("integer"), Nullable: true},
		{Name: "b", Type: prim("integer"), Nullable: true},
		{Name: "c", Type: prim("integer"), Nullable: true},
	}}
	cols := []parquetio.ColumnStats{
		{Path: []string{"a"}, Min: int32(1), Max: int32(2)}, {Path: []string{"b"}, Min: int32(3), Max: int32(4)}, {Path: []string{"c"}, Min: int32(5), Max: int32(6)},
	}
	first2 := statsTestSnapshot(t, map[string]string{PropNumIndexedCols: "2"}, schema)
	got, _ := first2.BuildStats(1, cols)
	if got != `{"numRecords":1,"minValues":{"a":1,"b":3},"maxValues":{"a":2,"b":4},"nullCount":{"a":0,"b":0}}` {
		t.Errorf("numIndexedCols=2: %s", got)
	}
	listed := statsTestSnapshot(t, map[string]string{PropStatsColumns: "C"}, schema)
	got, _ = listed.BuildStats(1, cols)
	if got != `{"numRecords":1,"minValues":{"c":5},"maxValues":{"c":6},"nullCount":{"c":0}}` {
		t.Errorf("dataSkippingStatsColumns=C: %s", got)
	}
	none := statsTestSnapshot(t, map[string]string{PropNumIndexedCols: "0"}, schema)
	got, _ = none.BuildStats(7, cols)
	if got != `{"numRecords":7}` {
		t.Errorf("numIndexedCols=0: %s", got)
	}
	dv := statsTestSnapshot(t, map[string]string{PropEnableDeletionVectors: "true"}, schema)
	got, _ = dv.BuildStats(1, cols[:1])
	if !strings.HasSuffix(got, `"tightBounds":true}`) {
		t.Errorf("DV table: %s", got)
	}
	mapped := &types.StructType{Fields: []*types.StructField{
		{Name: "a", Type: prim("integer"), Nullable: true, Metadata: mappingMeta(1, "col-aaa")},
	}}
	cm := statsTestSnapshot(t, map[string]string{PropColumnMappingMode: "name"}, mapped)
	got, _ = cm.BuildStats(1, []parquetio.ColumnStats{{Path: []string{"col-aaa"}, Min: int32(1), Max: int32(9)}})
	if got != `{"numRecords":1,"minValues":{"col-aaa":1},"maxValues":{"col-aaa":9},"nullCount":{"col-aaa":0}}` {
		t.Errorf("column mapping: %s", got)
	}
	parsed, _ := ParseStats(got, cm.Schema(), cm.ColumnMappingMode())
	if c, ok := parsed.Column("a"); !ok || c.Max != int32(9) {
		t.Errorf("physical stats not resolved to logical column: %+v", parsed.Columns)
	}
}

func mappingMeta(id int, physical string) map[string]json.RawMessage {
	return map[string]json.RawMessage{
		types.MetaColumnMappingID:           json.RawMessage(itoa(int64(id))),
		types.MetaColumnMappingPhysicalName: json.RawMessage(`"` + physical + `"`),
	}
}

// TestBuildStats_FromRealParquetWriterResult writes rows with parquetio and builds stats from
// the writer's result: the leaf paths it reports must line up with the stats columns.
func TestBuildStats_FromRealParquetWriterResult(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: prim("long"), Nullable: true},
		{Name: "name", Type: prim("string"), Nullable: true},
		{Name: "inner", Type: &types.StructType{Fields: []*types.StructField{{Name: "x", Type: prim("double"), Nullable: true}}}, Nullable: true},
	}}
	snap := statsTestSnapshot(t, nil, schema)
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, snap.PhysicalSchema(), parquetio.WriterOptions{})
	must(t, err)
	must(t, w.Write([]types.Struct{
		{int64(3), "bob", types.Struct{1.5}},
		{int64(-1), nil, types.Struct{nil}},
		{int64(7), "alice", nil},
	}))
	res, err := w.Close()
	must(t, err)
	got, err := snap.BuildStats(res.NumRows, res.Columns)
	must(t, err)
	st, err := ParseStats(got, snap.Schema(), snap.ColumnMappingMode())
	must(t, err)
	check := func(path string, min, max any, nulls int64) {
		c, ok := st.Column(strings.Split(path, ".")...)
		if !ok || c.Min != min || c.Max != max || c.NullCount == nil || *c.NullCount != nulls {
			t.Errorf("%s: %+v (stats %s)", path, c, got)
		}
	}
	check("id", int64(-1), int64(7), 0)
	check("name", "alice", "bob", 1)
	check("inner.x", 1.5, 1.5, 2)
	if *st.NumRecords != 3 {
		t.Errorf("numRecords %d", *st.NumRecords)
	}
}
