package delta

import (
	"encoding/json"
	"math/big"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestParsePartitionValue_TypedPerProtocol(t *testing.T) {
	ts := func(s string) types.Timestamp {
		us, err := parseTimestampMicros(s, true)
		if err != nil {
			t.Fatal(err)
		}
		return types.Timestamp(us)
	}
	cases := []struct {
		typ  types.DataType
		in   PartitionValue
		want types.Value
	}{
		{types.Primitive("string"), PartitionValue{Value: "a/b c"}, "a/b c"},
		{types.Primitive("string"), PartitionValue{Value: ""}, nil},
		{types.Primitive("string"), PartitionValue{Null: true}, nil},
		{types.Primitive("integer"), PartitionValue{Value: "-42"}, int32(-42)},
		{types.Primitive("long"), PartitionValue{Value: "9007199254740993"}, int64(9007199254740993)},
		{types.Primitive("boolean"), PartitionValue{Value: "true"}, true},
		{types.Primitive("date"), PartitionValue{Value: "2021-09-08"}, types.Date(18878)},
		{types.Primitive("timestamp"), PartitionValue{Value: "2021-09-08 11:11:11"}, ts("2021-09-08T11:11:11Z")},
		{types.Primitive("timestamp"), PartitionValue{Value: "2021-09-08T11:11:11.123456Z"}, ts("2021-09-08T11:11:11.123456Z")},
		{types.Primitive("timestamp"), PartitionValue{Value: "2021-09-08T13:11:11+02:00"}, ts("2021-09-08T11:11:11Z")},
		{types.Primitive("timestamp_ntz"), PartitionValue{Value: "2021-09-08 11:11:11.5"}, types.TimestampNTZ(ts("2021-09-08T11:11:11.5Z"))},
		{types.Primitive("binary"), PartitionValue{Value: "\u0001\u0002"}, []byte{1, 2}},
		{types.Decimal(10, 2), PartitionValue{Value: "1.5"}, types.DecimalValue{Unscaled: big.NewInt(150), Scale: 2}},
	}
	for _, c := range cases {
		got, err := ParsePartitionValue(c.typ, c.in)
		if err != nil {
			t.Errorf("%s %q: %v", c.typ, c.in.Value, err)
			continue
		}
		if (got == nil) != (c.want == nil) {
			t.Errorf("%s %q: got %v, want %v", c.typ, c.in.Value, got, c.want)
			continue
		}
		if got != nil {
			if b, ok := got.([]byte); ok {
				if string(b) != string(c.want.([]byte)) {
					t.Errorf("%s: %v", c.typ, b)
				}
				continue
			}
			if n, err := types.Compare(got, c.want); err != nil || n != 0 {
				t.Errorf("%s %q: got %v, want %v (%v)", c.typ, c.in.Value, got, c.want, err)
			}
		}
	}
	for _, bad := range []struct {
		typ types.DataType
		v   string
	}{{types.Primitive("integer"), "1.5"}, {types.Decimal(5, 1), "1.25"}, {types.Decimal(3, 0), "12345"}, {types.Primitive("timestamp_ntz"), "2021-01-01T00:00:00Z"}, {types.Primitive("date"), "yesterday"}} {
		if v, err := ParsePartitionValue(bad.typ, PartitionValue{Value: bad.v}); err == nil {
			t.Errorf("%s %q parsed as %v, want an error", bad.typ, bad.v, v)
		}
	}
}

func TestNormalizePartitionValue_GroupsEquivalentSpellings(t *testing.T) {
	same := []struct {
		typ  types.DataType
		a, b string
	}{
		{types.Primitive("timestamp"), "2024-01-01 00:00:00", "2024-01-01T00:00:00.000000Z"},
		{types.Primitive("timestamp"), "2024-01-01 02:00:00+02:00", "2024-01-01T00:00:00Z"},
		{types.Decimal(10, 2), "1.5", "1.50"},
		{types.Primitive("integer"), "007", "7"},
		{types.Primitive("boolean"), "TRUE", "true"},
	}
	for _, c := range same {
		na, err1 := NormalizePartitionValue(c.typ, PartitionValue{Value: c.a})
		nb, err2 := NormalizePartitionValue(c.typ, PartitionValue{Value: c.b})
		if err1 != nil || err2 != nil || na != nb {
			t.Errorf("%s: %q→%q and %q→%q should be equal (%v %v)", c.typ, c.a, na, c.b, nb, err1, err2)
		}
	}
	nullKey, _ := NormalizePartitionValue(types.Primitive("string"), PartitionValue{Null: true})
	emptyKey, _ := NormalizePartitionValue(types.Primitive("string"), PartitionValue{Value: ""})
	strKey, _ := NormalizePartitionValue(types.Primitive("string"), PartitionValue{Value: "null"})
	if nullKey != emptyKey || nullKey == strKey {
		t.Errorf("null keys: null=%q empty=%q \"null\"=%q", nullKey, emptyKey, strKey)
	}
}

func TestPartitionValues_JSONKeepsNullsAndSortsColumns(t *testing.T) {
	var pv PartitionValues
	if err := json.Unmarshal([]byte(`{"b":"2","a":null,"c":""}`), &pv); err != nil {
		t.Fatal(err)
	}
	if len(pv) != 3 || pv[0].Column != "a" || !pv[0].Null || pv[1].Column != "b" || pv[2].IsNull() != true {
		t.Fatalf("decoded %+v", pv)
	}
	out, _ := json.Marshal(pv)
	if string(out) != `{"a":null,"b":"2","c":""}` {
		t.Fatalf("encoded %s", out)
	}
	if e, ok := pv.Get("b"); !ok || e.Value != "2" {
		t.Fatalf("Get(b) = %+v %v", e, ok)
	}
	if _, ok := pv.Get("zz"); ok {
		t.Fatal("Get of a missing column succeeded")
	}
}

func TestFormatPartitionValue_WritesRecommendedForms(t *testing.T) {
	cases := []struct {
		v    types.Value
		want string
	}{
		{types.Timestamp(1_631_099_471_123_456), "2021-09-08T11:11:11.123456Z"},
		{types.TimestampNTZ(1_631_099_471_000_000), "2021-09-08 11:11:11.000000"},
		{types.Date(18878), "2021-09-08"},
		{types.DecimalValue{Unscaled: big.NewInt(-1234), Scale: 3}, "-1.234"},
		{int16(-7), "-7"},
		{2.5, "2.5"},
	}
	for _, c := range cases {
		pv, err := FormatPartitionValue("c", c.v)
		if err != nil || pv.Value != c.want || pv.Null {
			t.Errorf("%v: %+v %v, want %q", c.v, pv, err, c.want)
		}
	}
	if pv, _ := FormatPartitionValue("c", nil); !pv.Null {
		t.Error("nil did not format as null")
	}
}

func TestPartitionValuesOf_FormatsPhysicalKeysAndDirectories(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive("long"), Nullable: true, Metadata: mappingMeta(1, "col-id")},
		{Name: "day", Type: types.Primitive("date"), Nullable: true, Metadata: mappingMeta(2, "col-day")},
		{Name: "cat", Type: types.Primitive("string"), Nullable: true, Metadata: mappingMeta(3, "col-cat")},
	}}
	snap := statsTestSnapshot(t, map[string]string{PropColumnMappingMode: "name"}, schema, "day", "cat")
	pv, err := snap.PartitionValuesOf(map[string]types.Value{"day": types.Date(18878), "cat": "a/b=c"})
	must(t, err)
	out, _ := json.Marshal(pv)
	if string(out) != `{"col-cat":"a/b=c","col-day":"2021-09-08"}` {
		t.Fatalf("partition values %s", out)
	}
	dir, err := snap.PartitionDir(pv)
	if err != nil || dir != "col-day=2021-09-08/col-cat=a%2Fb%3Dc" {
		t.Fatalf("dir %q %v", dir, err)
	}
	if key, _ := ObjectKey("file:///t", EncodePath(dir+"/f.parquet")); key != dir+"/f.parquet" {
		t.Fatalf("encoded path does not round-trip: %q", key)
	}
	nulls, _ := snap.PartitionValuesOf(map[string]types.Value{"day": nil, "cat": nil})
	if dir, _ := snap.PartitionDir(nulls); dir != "col-day=__HIVE_DEFAULT_PARTITION__/col-cat=__HIVE_DEFAULT_PARTITION__" {
		t.Fatalf("null dir %q", dir)
	}
	if _, err := snap.PartitionValuesOf(map[string]types.Value{"day": types.Date(1)}); err == nil {
		t.Fatal("a missing partition value was accepted")
	}
	if _, err := snap.PartitionValuesOf(map[string]types.Value{"day": "x", "cat": "y"}); err == nil {
		t.Fatal("a string for a date column was accepted")
	}
}

func TestEscapePathName_EscapesWhatSparkEscapes(t *testing.T) {
	cases := map[string]string{
		"plain": "plain", "a b": "a b", "a/b": "a%2Fb", "a=b": "a%3Db", "50%": "50%25", "x:y": "x%3Ay",
		"q?#": "q%3F%23", "{[]}^*'\"\\": "%7B%5B%5D}%5E%2A%27%22%5C", "tab\t": "tab%09", "ünï": "ünï",
	}
	for in, want := range cases {
		if got := EscapePathName(in); got != want {
			t.Errorf("EscapePathName(%q) = %q, want %q", in, got, want)
		}
	}
}
