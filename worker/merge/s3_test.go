package merge

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestS3_UpsertWithDVsAndCopyOnWrite runs upserts into tables on the S3 test server from a source
// prefix and from a single source object there.
func TestS3_UpsertWithDVsAndCopyOnWrite(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	cfg := storage.Config{S3: srv.S3Config()}
	src, err := storage.Open(ctx, srv.Location("landing"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(ctx, "batch/1.json", []byte(`{"id":3,"name":"three","v":30,"p":"a"}`+"\n"+`{"id":7,"v":7,"gone":true}`+"\n"+`{"id":100,"name":"n100","v":100,"p":"b"}`+"\n")); err != nil {
		t.Fatal(err)
	}
	for _, dv := range []string{"false", "true"} {
		t.Run("dv="+dv, func(t *testing.T) {
			store, err := storage.Open(ctx, srv.Location("tables/dv"+dv), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tbl, _, err := tabletest.Create(ctx, store, baseSchema(), nil, "", map[string]string{"delta.enableDeletionVectors": dv})
			if err != nil {
				t.Fatal(err)
			}
			fx := &fixture{t: t, tbl: tbl}
			tenFiles(fx)
			for _, uri := range []string{srv.Location("landing/batch/"), srv.Location("landing/batch/1.json")} {
				b, err := ListBatch(ctx, uri, cfg)
				if err != nil || len(b.Files) != 1 {
					t.Fatalf("%s: %v %+v", uri, err, b)
				}
			}
			b, err := ListBatch(ctx, srv.Location("landing/batch"), cfg)
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Mode: Upsert, Keys: []string{"id"}, DeleteColumn: "gone", Storage: cfg}
			rep := fx.merge(b, o)
			if rep.FilesScanned != 1 || rep.RowsUpdated != 1 || rep.RowsDeleted != 1 || rep.RowsInserted != 1 {
				t.Fatalf("%+v", rep)
			}
			if (dv == "true") != (rep.DVsWritten == 1) || (dv == "true") == (rep.FilesRewritten == 1) {
				t.Fatalf("dv=%s: %+v", dv, rep)
			}
			rows := fx.rows()
			if len(rows) != 100 {
				t.Fatalf("%d rows", len(rows))
			}
			if !contains(rows, table.CanonicalRow(types.Struct{int64(3), "three", int64(30), "a"})) || contains(rows, table.CanonicalRow(row(7, 7, "b"))) {
				t.Fatalf("rows %v", rows)
			}
		})
	}
}

func contains(rows []string, r string) bool {
	for _, x := range rows {
		if x == r {
			return true
		}
	}
	return false
}
