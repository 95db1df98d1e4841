package parquetio

import (
	"context"
	"fmt"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestSortKeys_EqualKeyOfTheLogicalValueAndKeepItsOrder(t *testing.T) {
	var fields []*types.StructField
	for _, n := range []string{types.TypeBoolean, types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong,
		types.TypeFloat, types.TypeDouble, types.TypeString, types.TypeBinary, types.TypeDate, types.TypeTimestamp, types.TypeTimestampNTZ} {
		fields = append(fields, field(n, prim(n), true))
	}
	for _, p := range [][2]int{{9, 2}, {18, 0}, {38, 10}} {
		fields = append(fields, field(fmt.Sprintf("dec_%d_%d", p[0], p[1]), types.Decimal(p[0], p[1]), true))
	}
	schema := structOf(fields...)
	cases := makeInputs(t, schema, 4, 300, 11) // dictionary and plain pages, codecs, deletion vectors
	for i, c := range cases {
		keys, err := SortKeys(context.Background(), RewriteInput{File: memReader(c.data), Deleted: c.deleted}, schema, false)
		if err != nil {
			t.Fatal(err)
		}
		live := liveRows(cases[i : i+1])
		for col := range schema.Fields {
			if len(keys[col]) != len(live) {
				t.Fatalf("input %d, column %s: %d keys for %d live rows", i, schema.Fields[col].Name, len(keys[col]), len(live))
			}
			for r, row := range live {
				if want := KeyOf(row[col]); keys[col][r] != want {
					t.Fatalf("input %d, column %s, row %d (%v): key %x, KeyOf %x", i, schema.Fields[col].Name, r, row[col], keys[col][r], want)
				}
				// Monotone: a smaller value never gets a larger key.
				for _, other := range live[:min(r, 20)] {
					a, b := row[col], other[col]
					if a == nil || b == nil {
						continue
					}
					if cmp, err := types.Compare(a, b); err == nil && cmp < 0 && KeyOf(a) > KeyOf(b) {
						t.Fatalf("column %s: %v < %v but key %x > %x", schema.Fields[col].Name, a, b, KeyOf(a), KeyOf(b))
					}
				}
			}
		}
	}
}
