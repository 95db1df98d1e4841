package expr

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func testSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "region", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "amount", Type: types.Decimal(12, 2), Nullable: true},
		{Name: "day", Type: types.Primitive(types.TypeDate), Nullable: true},
		{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
		{Name: "score", Type: types.Primitive(types.TypeDouble), Nullable: true},
		{Name: "flag", Type: types.Primitive(types.TypeBoolean), Nullable: true},
		{Name: "s", Type: &types.StructType{Fields: []*types.StructField{
			{Name: "x", Type: types.Primitive(types.TypeInteger), Nullable: true}}}, Nullable: true},
		{Name: "tags", Type: &types.ArrayType{ElementType: types.Primitive(types.TypeString)}, Nullable: true},
	}}
}

func dec(unscaled int64, scale int) types.DecimalValue {
	return types.DecimalValue{Unscaled: big.NewInt(unscaled), Scale: scale}
}

// ts2024 is 2024-01-02T03:04:05.123456Z in microseconds.
const ts2024 = types.Timestamp(1704164645123456)

func row() types.Struct {
	return types.Struct{int64(7), "eu", dec(1250, 2), types.Date(19724), ts2024, 2.5, true,
		types.Struct{int32(3)}, types.Array{"a"}}
}

func TestEval_FiltersRowsWithSQLSemantics(t *testing.T) {
	nulls := make(types.Struct, 9)
	cases := []struct {
		where     string
		row, null bool // result on row() and on an all-null row
	}{
		{"id = 7", true, false},
		{"id <> 7", false, false},
		{"id != 8 AND region = 'eu'", true, false},
		{"id < 7", false, false},
		{"id <= 7", true, false},
		{"id > 6 and id >= 7", true, false},
		{"id IN (1, 7, NULL)", true, false},
		{"id in (1, 2)", false, false},
		{"id IS NULL", false, true},
		{"id IS NOT NULL", true, false},
		{"amount = 12.5", true, false},
		{"amount = 12.500", true, false},
		{"amount > 12.499", true, false},
		{"amount < '12.51'", true, false},
		{"day = '2024-01-02'", true, false},
		{"ts = '2024-01-02 03:04:05.123456'", true, false},
		{"ts = '2024-01-02T04:04:05.123456+01:00'", true, false},
		{"ts > '2024-01-02'", true, false},
		{"score >= 2.5 AND flag = true", true, false},
		{"s.x = 3", true, false},
		{"(id = 7 AND (region = 'eu')) AND s.x IS NOT NULL", true, false},
		{"tags IS NOT NULL", true, false},
		{"REGION = 'eu'", true, false},
		{"`region` = 'it''s'", false, false},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			p, err := Compile(c.where, testSchema())
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Eval(row()); got != c.row {
				t.Errorf("Eval(row) = %v, want %v", got, c.row)
			}
			if got := p.Eval(nulls); got != c.null {
				t.Errorf("Eval(nulls) = %v, want %v", got, c.null)
			}
		})
	}
}

func TestParse_ErrorsPointAtTheOffendingToken(t *testing.T) {
	cases := []struct{ where, pos, msg string }{
		{"id = 7 OR id = 8", "position 8", "OR is not supported"},
		{"id >> 7", "position 5", "expected a literal"},
		{"id = ", "end of input", "expected a literal"},
		{"id = NULL", "position 4", "use IS NULL"},
		{"nope = 1", "position 1", `no column "nope"`},
		{"region = eu", "position 10", "quote strings"},
		{"region = 5", "position 10", "quote string values"},
		{"day = '2024-13-01'", "position 7", "not a date"},
		{"id = 1.5", "position 6", "not an integer"},
		{"tags = 'a'", "position 1", "only supports IS [NOT] NULL"},
		{"(id = 1", "position 1", "unbalanced parenthesis"},
		{"id IN (1 2)", "position 10", "expected ',' or ')'"},
		{"region = \"eu\"", "position 10", "double quotes"},
		{"", "end of input", "empty predicate"},
		{"id LIKE 'x'", "position 4", "LIKE is not supported"},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			_, err := Compile(c.where, testSchema())
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a SyntaxError", err)
			}
			if msg := err.Error(); !strings.Contains(msg, c.pos) || !strings.Contains(msg, c.msg) || !strings.Contains(msg, "supported:") {
				t.Errorf("err = %q, want %q and %q", msg, c.pos, c.msg)
			}
		})
	}
}

type facts struct {
	part  map[string]types.Value
	stats map[string]ColumnStats
}

func (f facts) PartitionValue(c string) (types.Value, bool) { v, ok := f.part[c]; return v, ok }
func (f facts) ColumnStats(p []string) (ColumnStats, bool) {
	s, ok := f.stats[strings.Join(p, ".")]
	return s, ok
}

func i64(n int64) *int64 { return &n }

func TestMightMatch_NeverSkipsAFileThatMayHoldAMatch(t *testing.T) {
	long := strings.Repeat("m", 32)
	f := facts{
		part: map[string]types.Value{"region": "eu"},
		stats: map[string]ColumnStats{
			"id":     {Min: int64(10), Max: int64(20), NullCount: i64(0), NumRecords: i64(5)},
			"amount": {Min: dec(100, 2), Max: dec(250, 2), NullCount: i64(5), NumRecords: i64(5)},
			"ts":     {Min: types.Timestamp(1_000_000), Max: types.Timestamp(2_000_000), NullCount: i64(1), NumRecords: i64(5)},
			"s.x":    {Min: int32(1), Max: int32(1)},
			"score":  {Min: 1.0, Max: 2.0},
			"day":    {Max: types.Date(100)},
		},
	}
	trunc := facts{stats: map[string]ColumnStats{"region": {Min: "a", Max: long}}}
	short := facts{stats: map[string]ColumnStats{"region": {Min: "a", Max: "m"}}}
	cases := []struct {
		where string
		f     facts
		want  bool
	}{
		{"region = 'eu'", f, true},
		{"region = 'us'", f, false},
		{"region IS NULL", f, false},
		{"id = 15", f, true},
		{"id = 21", f, false},
		{"id = 9", f, false},
		{"id IN (1, 25)", f, false},
		{"id IN (1, 20)", f, true},
		{"id < 10", f, false},
		{"id <= 10", f, true},
		{"id > 20", f, false},
		{"id >= 20", f, true},
		{"id != 15", f, true},
		{"s.x != 1", f, false},
		{"id IS NULL", f, false},
		{"id IS NOT NULL", f, true},
		{"amount = 1.5", f, false},              // every value is null
		{"amount IS NULL", f, true},             //
		{"ts IS NULL", f, true},                 //
		{"ts > '1970-01-01 00:00:02'", f, true}, // max is truncated to ms: up to 2.000999 s
		{"ts > '1970-01-01 00:00:02.000999'", f, false},
		{"score > 100", f, true}, // a NaN would match, and max does not tell
		{"score < 1", f, false},
		{"day <= '1970-04-10'", f, true}, // no min: unknown
		{"day > '1970-04-11'", f, false},
		{"flag = true", f, true},       // no stats
		{"region > 'n'", trunc, true},  // max may be a cut prefix
		{"region > 'n'", short, false}, //
		{"region = 'eu' AND id = 99", f, false},
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			p, err := Compile(c.where, testSchema())
			if err != nil {
				t.Fatal(err)
			}
			if got := p.MightMatch(c.f); got != c.want {
				t.Errorf("MightMatch = %v, want %v", got, c.want)
			}
		})
	}
}

func TestEval_OrdersNaNAboveEveryNumber(t *testing.T) {
	p, err := Compile("score > 1e300", testSchema())
	if err != nil {
		t.Fatal(err)
	}
	r := row()
	r[5] = math.NaN()
	if !p.Eval(r) {
		t.Error("NaN > 1e300 should be true (Spark orders NaN last)")
	}
}

func TestPartitionOnly_RejectsDataColumns(t *testing.T) {
	e, err := Parse("region = 'eu' AND day = '2024-01-01'")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.PartitionOnly([]string{"region", "day"}); err != nil {
		t.Errorf("partition columns only: %v", err)
	}
	err = e.PartitionOnly([]string{"region"})
	if err == nil || !strings.Contains(err.Error(), `"day" is not a partition column`) {
		t.Errorf("err = %v, want a refusal naming day", err)
	}
	if err := e.PartitionOnly(nil); err == nil || !strings.Contains(err.Error(), "not partitioned") {
		t.Errorf("unpartitioned: err = %v", err)
	}
}

func TestColumns_ListsEachColumnOnce(t *testing.T) {
	e, err := Parse("a = 1 AND b.c IS NULL AND a > 0")
	if err != nil {
		t.Fatal(err)
	}
	got := e.Columns()
	if len(got) != 2 || got[0][0] != "a" || strings.Join(got[1], ".") != "b.c" {
		t.Errorf("Columns = %v", got)
	}
}
