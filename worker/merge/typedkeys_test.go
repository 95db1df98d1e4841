package merge

import (
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestUpsert_StringAndCompositeKeysPruneAndMatch: a merge keyed on one string column (the sorted
// []string form) and on (name, v) — a string and a long packed into order-preserving tuples — skips
// exactly the files whose key ranges hold no batch key, updates the matched rows and inserts the
// others; a null key component never matches.
func TestUpsert_StringAndCompositeKeysPruneAndMatch(t *testing.T) {
	fx := newFixture(t, nil, nil)
	// Three files with disjoint name ranges: n1..n3, n4..n6, n7..n9 sort as strings in that order.
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"), row(3, 3, "a"))
	fx.appendFile(row(4, 4, "a"), row(5, 5, "a"), row(6, 6, "a"))
	fx.appendFile(row(7, 7, "a"), row(8, 8, "a"), row(9, 9, "a"))

	b := fx.source(`{"id":50,"name":"n5","v":50,"p":"b"}`, `{"id":90,"name":"n9","v":90,"p":"b"}`, `{"id":0,"name":"n0x","v":0,"p":"b"}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"name"}})
	if rep.FilesScanned != 2 || rep.FilesPrunedByStats != 1 || rep.RowsUpdated != 2 || rep.RowsInserted != 1 {
		t.Fatalf("string key: %+v; want 2 files scanned, 1 pruned by statistics, 2 updated, 1 inserted", rep)
	}
	fx.expectRows(row(1, 1, "a"), row(2, 2, "a"), row(3, 3, "a"), row(4, 4, "a"),
		types.Struct{int64(50), "n5", int64(50), "b"}, row(6, 6, "a"), row(7, 7, "a"), row(8, 8, "a"),
		types.Struct{int64(90), "n9", int64(90), "b"}, types.Struct{int64(0), "n0x", int64(0), "b"})

	// Composite (name, v): n2 with v 2 matches, n3 with v 99 and n7 with a null v do not; the file of
	// n4..n6 holds no batch name and is pruned.
	b = fx.source(`{"id":20,"name":"n2","v":2,"p":"c"}`, `{"id":30,"name":"n3","v":99,"p":"c"}`, `{"id":70,"name":"n7","p":"c"}`)
	rep = fx.merge(b, Options{Mode: Upsert, Keys: []string{"name", "v"}})
	if rep.RowsUpdated != 1 || rep.RowsInserted != 2 || rep.FilesPrunedByStats < 1 {
		t.Fatalf("composite key: %+v; want 1 updated, 2 inserted, the n4..n6 file pruned", rep)
	}
	fx.expectRows(row(1, 1, "a"), types.Struct{int64(20), "n2", int64(2), "c"}, row(3, 3, "a"), row(4, 4, "a"),
		types.Struct{int64(50), "n5", int64(50), "b"}, row(6, 6, "a"), row(7, 7, "a"), row(8, 8, "a"),
		types.Struct{int64(90), "n9", int64(90), "b"}, types.Struct{int64(0), "n0x", int64(0), "b"},
		types.Struct{int64(30), "n3", int64(99), "c"}, types.Struct{int64(70), "n7", nil, "c"})
}
