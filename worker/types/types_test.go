package types

import (
	"encoding/json"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// Every schemaString in the conformance tables (Spark, Databricks, delta-rs) parses, and writing it back gives
// a schema that parses to the same thing: metadata (column mapping ids, invariants…) survives verbatim.
func TestSchema_RoundTripsEverySchemaOfTheConformanceTables(t *testing.T) {
	dir := testutil.ConformanceDir(t)
	var n int
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") || !strings.Contains(path, "_delta_log") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(data), "\n") {
			var a struct {
				MetaData *struct {
					SchemaString string `json:"schemaString"`
				} `json:"metaData"`
			}
			// Two negative fixtures have metaData without a schema at all; the log layer refuses them.
			if json.Unmarshal([]byte(line), &a) != nil || a.MetaData == nil || a.MetaData.SchemaString == "" {
				continue
			}
			n++
			s, err := ParseSchema(a.MetaData.SchemaString)
			if err != nil {
				t.Errorf("%s: %v", path, err)
				continue
			}
			out, err := s.SchemaString()
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseSchema(out)
			if err != nil {
				t.Fatalf("%s: our own output does not parse: %v\n%s", path, err, out)
			}
			if again.String() != s.String() {
				t.Errorf("%s: round trip changed the schema:\n%s\n%s", path, s, again)
			}
			if out2, _ := again.SchemaString(); out2 != out {
				t.Errorf("%s: writing is not deterministic", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("found only %d schemas in the conformance tables", n)
	}
}

func TestParseSchema_RejectsWhatIsNotADeltaSchema(t *testing.T) {
	for _, s := range []string{
		`"integer"`, // not a struct
		`{"type":"struct","fields":[{"name":"a","type":"decimal(39,2)","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"decimal(5,6)","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":"uint64","nullable":true,"metadata":{}}]}`,
		`{"type":"struct","fields":[{"name":"a","type":{"type":"tuple"},"nullable":true,"metadata":{}}]}`,
		`{"type":"struct"`,
	} {
		if _, err := ParseSchema(s); err == nil {
			t.Errorf("ParseSchema(%s) accepted it", s)
		}
	}
	st, err := ParseSchema(`{"type":"struct","fields":[{"name":"d","type":"decimal","metadata":{"delta.columnMapping.id":5,"delta.columnMapping.physicalName":"col-1"}}]}`)
	if err != nil {
		t.Fatal(err)
	}
	f := st.Fields[0]
	if f.Type.String() != "decimal(10,0)" || !f.Nullable || f.PhysicalName() != "col-1" {
		t.Errorf("bare decimal / default nullability / physical name: %s %v %s", f.Type, f.Nullable, f.PhysicalName())
	}
	if id, ok := f.FieldID(); !ok || id != 5 {
		t.Errorf("field id = %d, %v", id, ok)
	}
}

func TestDecimalValue_RendersExactly(t *testing.T) {
	cases := []struct {
		unscaled string
		scale    int
		want     string
	}{
		{"12345", 2, "123.45"}, {"-5", 3, "-0.005"}, {"0", 2, "0.00"}, {"7", 0, "7"}, {"7", -2, "700"},
		{"12345678901234567890123456789012345678", 10, "1234567890123456789012345678.9012345678"},
	}
	for _, tc := range cases {
		u, _ := new(big.Int).SetString(tc.unscaled, 10)
		if got := (DecimalValue{Unscaled: u, Scale: tc.scale}).String(); got != tc.want {
			t.Errorf("%s×10^-%d = %s, want %s", tc.unscaled, tc.scale, got, tc.want)
		}
	}
}

func TestCompare_OrdersLikeSparkAndRefusesMixedTypes(t *testing.T) {
	dec := func(u int64, s int) DecimalValue { return DecimalValue{Unscaled: big.NewInt(u), Scale: s} }
	cases := []struct {
		a, b Value
		want int
	}{
		{math.NaN(), 1e300, 1}, {math.Inf(-1), -1e300, -1}, {math.NaN(), math.NaN(), 0},
		{dec(150, 2), dec(15, 1), 0}, {dec(-1, 0), dec(1, 5), -1},
		{"a", "b", -1}, {"é", "z", 1}, // bytewise UTF-8, as Delta statistics compare
		{[]byte{1}, []byte{1, 0}, -1}, {false, true, -1},
		{Timestamp(5), Timestamp(4), 1}, {Date(-1), Date(0), -1},
	}
	for _, tc := range cases {
		got, err := Compare(tc.a, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("Compare(%v, %v) = %d, %v; want %d", tc.a, tc.b, got, err, tc.want)
		}
	}
	if _, err := Compare(int32(1), int64(1)); err == nil {
		t.Error("int32 vs int64 compared")
	}
	if ts := Timestamp(1_700_000_000_123_456).String(); ts != "2023-11-14T22:13:20.123456Z" {
		t.Errorf("Timestamp.String = %s", ts)
	}
}

func TestMapFields_VisitsEveryFieldParentFirstAndCopies(t *testing.T) {
	in := &StructType{Fields: []*StructField{
		{Name: "a", Type: Primitive(TypeLong)},
		{Name: "s", Type: &StructType{Fields: []*StructField{{Name: "x", Type: Primitive(TypeInteger)}}}},
		{Name: "l", Type: &ArrayType{ElementType: &StructType{Fields: []*StructField{{Name: "y", Type: Primitive(TypeString)}}}, ContainsNull: true}},
		{Name: "m", Type: &MapType{KeyType: Primitive(TypeString), ValueType: &StructType{Fields: []*StructField{{Name: "z", Type: Primitive(TypeDouble)}}}}},
	}}
	before := in.String()
	var order []string
	out := MapFields(in, func(f *StructField) *StructField {
		order = append(order, f.Name)
		return &StructField{Name: strings.ToUpper(f.Name), Nullable: true}
	}).(*StructType)
	if got := strings.Join(order, ","); got != "a,s,x,l,y,m,z" {
		t.Errorf("visit order %s, want parent first, in field order", got)
	}
	if want := "struct<A:long,S:struct<X:integer>,L:array<struct<Y:string>>,M:map<string,struct<Z:double>>>"; out.String() != want {
		t.Errorf("mapped %s, want %s", out, want)
	}
	if in.String() != before || in.Fields[0].Nullable {
		t.Error("the input was modified")
	}
}
