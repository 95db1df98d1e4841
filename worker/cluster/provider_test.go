package cluster_test

import (
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// appendWithProvider appends files that claim another clustering implementation.
func appendWithProvider(t *testing.T, f *fixture, rows []types.Struct, provider string) []*delta.AddFile {
	t.Helper()
	res, err := table.Append(f.ctx, f.latest(), rows, table.WriteOptions{DataChange: true, ClusteringProvider: provider})
	if err != nil {
		t.Fatal(err)
	}
	return res.Files
}
