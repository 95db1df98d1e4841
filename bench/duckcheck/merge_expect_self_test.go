package duckcheck

import (
	"sort"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"
)

// TestMergeModel_SQLGivesTheHandWorkedResults checks the model's SQL itself on small cases worked out by
// hand, so that a wrong model cannot pass a wrong engine.
func TestMergeModel_SQLGivesTheHandWorkedResults(t *testing.T) {
	db := ducktest.Open(t)
	cols := []string{"k", "v", "p", "seq", "del"}
	setup := func(prev, batch string) {
		for _, q := range []string{
			"CREATE OR REPLACE TABLE prev (k BIGINT, v VARCHAR, p BIGINT, seq BIGINT, del BOOLEAN)",
			"CREATE OR REPLACE TABLE batch (k BIGINT, v VARCHAR, p BIGINT, seq BIGINT, del BOOLEAN)",
			"INSERT INTO prev VALUES " + prev, "INSERT INTO batch VALUES " + batch,
		} {
			if _, err := db.Exec(q); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
		}
	}
	rowsOf := func(q string) string {
		rows, err := db.Query("SELECT coalesce(k::VARCHAR, 'null') || ':' || v FROM (" + q + ")")
		if err != nil {
			t.Fatalf("%v\n%s", err, q)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			rows.Scan(&s)
			out = append(out, s)
		}
		sort.Strings(out)
		return strings.Join(out, " ")
	}
	prev := "(1, 'a', 0, 1, false), (2, 'b', 0, 2, false), (NULL, 'n', 1, 3, false), (4, 'd', 1, 4, false), (4, 'd2', 1, 5, false)"
	batch := "(1, 'x', 1, 10, false), (2, 'y', 0, 11, true), (3, 'z', 0, 12, false), (5, 'gone', 0, 13, true), (NULL, 'w', 0, 14, false), (4, 'e', 1, 15, false)"
	for _, tc := range []struct {
		name string
		spec mergeSpec
		want string
	}{
		// 1 updated (its partition changes), 2 deleted by its marker, 3 inserted, 5 never inserted, the null
		// keys on both sides never match, and both target rows of key 4 take the one source row.
		{"upsert", mergeSpec{mode: "upsert", keys: []string{"k"}, deleteColumn: "del"}, "1:x 3:z 4:e 4:e null:n null:w"},
		{"upsert without marker", mergeSpec{mode: "upsert", keys: []string{"k"}}, "1:x 2:y 3:z 4:e 4:e 5:gone null:n null:w"},
		{"update", mergeSpec{mode: "update", keys: []string{"k"}}, "1:x 2:y 4:e 4:e null:n"},
		{"delete", mergeSpec{mode: "delete", keys: []string{"k"}}, "null:n"},
		{"append", mergeSpec{mode: "append"}, "1:a 1:x 2:b 2:y 3:z 4:d 4:d2 4:e 5:gone null:n null:w"},
		{"overwrite partitions", mergeSpec{mode: "overwrite", scope: "partitions", partitionCol: "p"}, "1:x 2:y 3:z 4:e 5:gone null:w"},
		{"overwrite table", mergeSpec{mode: "overwrite", scope: "table"}, "1:x 2:y 3:z 4:e 5:gone null:w"},
	} {
		setup(prev, batch)
		tc.spec.columns = cols
		if got := rowsOf(tc.spec.expectedSQL()); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	// The overwrite of partitions keeps partition 1 only when the batch has no row in it.
	setup(prev, "(7, 'q', 0, 1, false)")
	if got := rowsOf(mergeSpec{mode: "overwrite", scope: "partitions", partitionCol: "p", columns: cols}.expectedSQL()); got != "4:d 4:d2 7:q null:n" {
		t.Errorf("overwrite of partition 0: %s", got)
	}
	// --order-by: the largest ordering value wins, whatever the file order; null keys are never deduplicated.
	setup(prev, "(1, 'late', 0, 30, false), (1, 'early', 0, 20, false), (3, 'b', 0, 5, true), (3, 'a', 0, 6, false), (NULL, 'u', 0, 1, false), (NULL, 'u2', 0, 2, false)")
	spec := mergeSpec{mode: "upsert", keys: []string{"k"}, orderBy: "seq", deleteColumn: "del", columns: cols}
	if got, want := rowsOf(spec.expectedSQL()), "1:late 2:b 3:a 4:d 4:d2 null:n null:u null:u2"; got != want {
		t.Errorf("upsert --order-by: %s, want %s", got, want)
	}
	// --partition-pruning p: the batch has only partition 1, so key 1's target row in partition 0 cannot match.
	setup("(1, 'a', 0, 1, false), (4, 'd', 1, 2, false)", "(1, 'x', 1, 3, false), (4, 'e', 1, 4, false)")
	spec = mergeSpec{mode: "upsert", keys: []string{"k"}, pruned: true, partitionCol: "p", columns: cols}
	if got, want := rowsOf(spec.expectedSQL()), "1:a 1:x 4:e"; got != want {
		t.Errorf("upsert --partition-pruning p: %s, want %s", got, want)
	}
	// Ambiguity: key 1 twice matches one target row; keys matching nothing twice do not count.
	setup(prev, "(1, 'x', 0, 1, false), (1, 'y', 0, 2, false), (9, 'p', 0, 3, false), (9, 'q', 0, 4, false)")
	var n int64
	if err := db.QueryRow(mergeSpec{mode: "upsert", keys: []string{"k"}}.ambiguousKeysSQL()).Scan(&n); err != nil || n != 1 {
		t.Errorf("ambiguous target rows: %d (%v), want 1", n, err)
	}
}
