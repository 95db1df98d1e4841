package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestDelete_DeletesMatchingRowsAndReportsTheResult(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 3, 200, "--partitioned")
	out, errOut, code := execute(t, newDeleteCmd, loc, "--where", "order_id < 10", "--json")
	if code != result.ExitSucceeded {
		t.Fatalf("delete exited %d: %s", code, errOut)
	}
	r := decodeResult(t, out)
	d := r.Delete
	if r.Command != "delete" || d == nil || d.RowsDeleted != 10 || d.FilesTouched == 0 || d.Version != 4 || d.FilesTotal != 3 ||
		d.FilesScanned+d.FilesPrunedByPartition+d.FilesPrunedByStats != 3 || d.Predicate != "order_id < 10" {
		t.Fatalf("result %+v / %+v", r, d)
	}
	rows, _ := scanJSONL(t, loc)
	if len(rows) != 590 {
		t.Fatalf("%d rows after deleting 10 of 600", len(rows))
	}
	for _, row := range rows {
		if id, err := row["order_id"].(json.Number).Int64(); err != nil || id < 10 {
			t.Fatalf("row %v survived", row)
		}
	}
	// The same delete again matches nothing: nothing committed, exit code 3.
	out, _, code = execute(t, newDeleteCmd, loc, "--where", "order_id < 10", "-o", "json")
	if r := decodeResult(t, out); code != result.ExitNothingToDo || r.Outcome != result.NothingToDo || r.Delete.Version != -1 {
		t.Fatalf("repeated delete: exit %d, %+v", code, r.Delete)
	}
	// Text output for people.
	out, _, code = execute(t, newDeleteCmd, loc, "--where", "order_id >= 10 AND order_id < 12")
	if code != 0 || !strings.Contains(out, "deleted 2 rows in version 5") {
		t.Fatalf("text output (exit %d): %s", code, out)
	}
}

func TestDelete_RefusesBadPredicatesNamingTheColumn(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 1, 10)
	for _, c := range []struct{ where, want string }{
		{"no_such_column = 1", "no_such_column"},
		{"order_id = 'abc'", "order_id"},
		{"order_id <", "--where"},
		{"", "--where is required"},
	} {
		out, _, code := execute(t, newDeleteCmd, loc, "--where", c.where, "-o", "json")
		r := decodeResult(t, out)
		if code != result.ExitRefused || r.Reason != result.ReasonBadArgument || !strings.Contains(r.Message, c.want) {
			t.Errorf("--where %q: exit %d, %s %q; want a refusal naming %q", c.where, code, r.Reason, r.Message, c.want)
		}
	}
}

func TestDelete_RefusesAChangeDataFeedTable(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "t")
	store, err := storage.NewLocal(loc)
	if err != nil {
		t.Fatal(err)
	}
	schema := &types.StructType{Fields: []*types.StructField{{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true}}}
	snap, err := delta.NewTable(store).Create(t.Context(), delta.CreateOptions{Schema: schema, Configuration: map[string]string{delta.PropEnableCDF: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Append(t.Context(), snap, []types.Struct{{int64(1)}}, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, _, code := execute(t, newDeleteCmd, loc, "--where", "id = 1", "--json")
	r := decodeResult(t, out)
	if code != result.ExitRefused || r.Reason != result.ReasonUnsupportedFeature || !strings.Contains(r.Message, "change data feed") {
		t.Fatalf("exit %d, %s: %s", code, r.Reason, r.Message)
	}
}

// TestDelete_WritesDeletionVectorsOnARealS3Server deletes from a DV table on the project's S3 test
// server: the DV file is written with PutIfAbsent there and read back by the scan.
func TestDelete_WritesDeletionVectorsOnARealS3Server(t *testing.T) {
	srv := s3server.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretAccessKey)
	t.Setenv("AWS_REGION", s3server.Region)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv(storage.EnvS3PathStyle, "true")
	loc := srv.Location("lake/dv")
	store, err := storage.Open(t.Context(), loc, storage.ConfigFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: false},
		{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true}}}
	tbl := delta.NewTable(store)
	snap, err := tbl.Create(t.Context(), delta.CreateOptions{Schema: schema, PartitionColumns: []string{"p"},
		Configuration: map[string]string{delta.PropEnableDeletionVectors: "true"}})
	if err != nil {
		t.Fatal(err)
	}
	var rows []types.Struct
	for i := range 1000 {
		rows = append(rows, types.Struct{int64(i), []string{"a", "b"}[i%2]})
	}
	if _, err := table.Append(t.Context(), snap, rows, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := execute(t, newDeleteCmd, loc, "--where", "id >= 100 AND id < 300", "--json")
	if code != 0 {
		t.Fatalf("delete exited %d: %s", code, errOut)
	}
	if d := decodeResult(t, out).Delete; d.RowsDeleted != 200 || d.DVsWritten != 2 || d.FilesRewritten != 0 {
		t.Fatalf("result %+v", d)
	}
	after, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var dvFiles int
	for _, err := range store.List(t.Context(), "deletion_vector_", "") {
		if err != nil {
			t.Fatal(err)
		}
		dvFiles++
	}
	for _, f := range after.Files() {
		if f.DeletionVector == nil || f.DeletionVector.Cardinality != 100 {
			t.Fatalf("file %s: DV %+v, want 100 rows deleted in each partition", f.Path, f.DeletionVector)
		}
	}
	if dvFiles != 1 {
		t.Errorf("%d DV files, want the commit's one", dvFiles)
	}
	got, _ := scanJSONL(t, loc, "--where", "id >= 50 AND id < 350")
	if len(got) != 100 {
		t.Fatalf("%d rows in [50, 350) after deleting [100, 300), want 100", len(got))
	}
}
