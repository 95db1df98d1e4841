package cluster_test

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// rowIdentities maps every live row's stable row id to the row and its row commit version
// (tabletest.RowIdentities).
func rowIdentities(t *testing.T, snap *delta.Snapshot) map[int64]string {
	t.Helper()
	ids, err := tabletest.RowIdentities(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func sameIdentities(t *testing.T, before, after map[int64]string) {
	t.Helper()
	if err := tabletest.SameIdentities(before, after); err != nil {
		t.Fatal(err)
	}
}
