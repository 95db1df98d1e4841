package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FuzzWhere: the --where parser never panics; a predicate it refuses is a *SyntaxError pointing
// inside the source; one it accepts still parses in parentheses and conjoined with itself, with
// the same columns and the same verdict on a row; and data skipping is sound: a one-row file whose
// statistics are exactly its row is never skipped when the row matches (MightMatch is true
// whenever Eval is).
func FuzzWhere(f *testing.F) {
	for _, s := range whereSeeds(f) {
		f.Add(s, int64(7), "eu", false, 2.5)
	}
	for _, s := range []string{"id = 7", "region IN ('eu', 'us') AND flag = true", "day BETWEEN '2024-01-01' AND '2024-02-01'",
		"ts >= '2024-01-02T03:04:05.123456Z' AND score IS NULL", "NOT flag", "s.x < 4", "amount = 12.50", "(id > 1", "'unterminated", "id = = 3", ""} {
		f.Add(s, int64(-1), "", true, math.Copysign(0, -1))
	}
	schema := testSchema()
	f.Fuzz(func(t *testing.T, src string, id int64, region string, nullRegion bool, score float64) {
		e, err := Parse(src)
		if err != nil {
			var syn *SyntaxError
			if !errors.As(err, &syn) || syn.Pos < 0 || syn.Pos > len(src) {
				t.Fatalf("%q: error %v is not a SyntaxError inside the source", src, err)
			}
			return
		}
		for _, wrapped := range []string{"(" + src + ")", "(" + src + ") AND (" + src + ")"} {
			w, err := Parse(wrapped)
			if err != nil {
				t.Fatalf("%q parses but %q does not: %v", src, wrapped, err)
			}
			if fmt.Sprint(w.Columns()) != fmt.Sprint(e.Columns()) {
				t.Fatalf("%q: columns %v, wrapped %v", src, e.Columns(), w.Columns())
			}
		}
		p, err := e.Bind(schema)
		if err != nil {
			return // a column or type the schema does not have
		}
		r := row()
		r[0], r[5] = id, score
		r[1] = region
		if nullRegion {
			r[1] = nil
		}
		if twice, err := Compile("("+src+") AND ("+src+")", schema); err != nil || twice.Eval(r) != p.Eval(r) {
			t.Fatalf("%q: conjoined with itself it binds with %v or judges the row %v differently", src, err, r)
		}
		if p.Eval(r) && !p.MightMatch(oneRowFacts{schema: schema, row: r}) {
			t.Fatalf("%q matches the row %v but skipping drops the file that holds only it", src, r)
		}
	})
}

// oneRowFacts are the exact statistics of a file holding one row: min = max = the value.
type oneRowFacts struct {
	schema *types.StructType
	row    types.Struct
}

func (oneRowFacts) PartitionValue(string) (types.Value, bool) { return nil, false }

func (f oneRowFacts) ColumnStats(path []string) (ColumnStats, bool) {
	if len(path) != 1 {
		return ColumnStats{}, false
	}
	for i, fl := range f.schema.Fields {
		if fl.Name != path[0] {
			continue
		}
		if _, ok := fl.Type.(*types.PrimitiveType); !ok {
			return ColumnStats{}, false
		}
		one, nulls := int64(1), int64(0)
		v := f.row[i]
		if v == nil {
			nulls = 1
		}
		return ColumnStats{Min: v, Max: v, NullCount: &nulls, NumRecords: &one}, true
	}
	return ColumnStats{}, false
}

var (
	dateLike = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	tsLike   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}`)
)

// whereSeeds builds predicates from the conformance tables' statistics (extracted at test time): a
// comparison of each column with its real minimum, and the same literal against the test
// schema's column of that kind, so the seeds carry real literals of every type.
func whereSeeds(t testing.TB) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] && len(out) < 600 {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, path := range testutil.ConformanceLogFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			var a struct {
				Add *struct {
					Stats string `json:"stats"`
				} `json:"add"`
			}
			if json.Unmarshal([]byte(line), &a) != nil || a.Add == nil || a.Add.Stats == "" {
				continue
			}
			var st struct {
				MinValues map[string]any `json:"minValues"`
			}
			if json.Unmarshal([]byte(a.Add.Stats), &st) != nil {
				continue
			}
			for col, v := range st.MinValues {
				quoted := "`" + strings.ReplaceAll(col, "`", "``") + "`"
				switch x := v.(type) {
				case float64:
					add(fmt.Sprintf("%s >= %v", quoted, x))
					add(fmt.Sprintf("id <= %v AND score > %v", x, x))
				case string:
					lit := "'" + strings.ReplaceAll(x, "'", "''") + "'"
					add(fmt.Sprintf("%s = %s", quoted, lit))
					switch {
					case dateLike.MatchString(x):
						add("day >= " + lit)
					case tsLike.MatchString(x):
						add("ts < " + lit)
					default:
						add("region IN (" + lit + ", 'eu')")
					}
				case bool:
					add(fmt.Sprintf("%s = %v AND flag", quoted, x))
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("no statistics in the conformance tables to seed predicates from")
	}
	return out
}
