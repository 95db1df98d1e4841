package merge

import (
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestUpsert_RowTrackingKeepsUpdatedRowIDs: with row tracking enabled (copy-on-write and DVs), an
// updated row keeps its stable row id and gets the merge's commit version; untouched rows keep
// both; an inserted row gets a fresh id.
func TestUpsert_RowTrackingKeepsUpdatedRowIDs(t *testing.T) {
	for _, dv := range []string{"false", "true"} {
		t.Run("dv="+dv, func(t *testing.T) {
			fx := newFixture(t, nil, map[string]string{delta.PropEnableRowTracking: "true", "delta.enableDeletionVectors": dv})
			tenFiles(fx)
			before, err := tabletest.RowIdentities(t.Context(), fx.latest())
			if err != nil {
				t.Fatal(err)
			}
			rep := fx.merge(fx.source(`{"id":5,"name":"five","v":50,"p":"b"}`, `{"id":1000,"name":"new","v":1,"p":"a"}`), Options{Mode: Upsert, Keys: []string{"id"}})
			after, err := tabletest.RowIdentities(t.Context(), fx.latest())
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != 101 {
				t.Fatalf("%d row ids, want 101", len(after))
			}
			updated := table.CanonicalRow(types.Struct{int64(5), "five", int64(50), "b", rep.Version})
			original := table.CanonicalRow(row(5, 5, "b")) + " | "
			for id, was := range before {
				now := after[id]
				if strings.HasPrefix(was, original) {
					if now != updated {
						t.Fatalf("row id %d: was %q, now %q; want %q: the updated row keeps its id and gets version %d", id, was, now, updated, rep.Version)
					}
					continue
				}
				if now != was {
					t.Fatalf("row id %d: was %q, now %q", id, was, now)
				}
			}
		})
	}
}
