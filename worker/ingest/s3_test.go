package ingest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestS3_ThreeFormatsCompressedAndNotIntoATableOnS3(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	cfg := storage.Config{S3: srv.S3Config()}
	tblStore, err := storage.Open(ctx, srv.Location("tables/t"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.NewTable(tblStore)
	schema := &types.StructType{Fields: []*types.StructField{longCol("id"), {Name: "s", Type: types.Primitive(types.TypeString), Nullable: true}}}
	for _, tc := range []struct {
		format string
		opts   map[string]string
		files  map[string]string
	}{
		{format.CSV, map[string]string{"header": "true"}, map[string]string{
			"csv/2026-01-01/a.csv": "id,s\n1,\"x, y\"\n", "csv/2026-01-02/b.csv.gz": gz("id,s\n2,z\n"), "csv/_SUCCESS": ""}},
		{format.JSON, nil, map[string]string{
			"json/9.json": `{"id":3,"s":"a"}`, "json/1.json.zst": zst(`{"id":4}` + "\n" + `{"id":5,"s":"b"}`), "json/.tmp.json": "garbage"}},
		{format.Parquet, nil, map[string]string{
			"parquet/p1.parquet": parquetFile(t, schema, types.Struct{int64(6), "p"}), "parquet/x/p0.parquet": parquetFile(t, schema, types.Struct{int64(7), nil})}},
	} {
		src, err := storage.Open(ctx, srv.Location("landing/"+tc.format), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range tc.files {
			if err := src.Put(ctx, strings.TrimPrefix(k, tc.format+"/"), []byte(v)); err != nil {
				t.Fatal(err)
			}
		}
		fo, err := format.ParseOptions(tc.format, tc.opts, "")
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Source: srv.Location("landing/" + tc.format), Format: fo, Storage: cfg, AvailableNow: true, MaxFilesPerTrigger: 1, Logger: quiet}
		rep, err := Run(ctx, tbl, o)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if len(rep.Batches) != 2 || rep.Backlog.Files != 0 {
			t.Fatalf("%s: %d batches, backlog %+v, want 2 and none", tc.format, len(rep.Batches), rep.Backlog)
		}
		// A file arriving after the run is the next run's only batch.
		if err := src.Put(ctx, "zz/late."+tc.format, []byte(map[string]string{format.CSV: "id,s\n100,late\n", format.JSON: `{"id":100,"s":"late"}`,
			format.Parquet: parquetFile(t, schema, types.Struct{int64(100), "late"})}[tc.format])); err != nil {
			t.Fatal(err)
		}
		if rep, err = Run(ctx, tbl, o); err != nil || len(rep.Batches) != 1 || rep.Batches[0].Rows != 1 {
			t.Fatalf("%s: late file: %v %+v", tc.format, err, rep)
		}
	}
	fx := &fixture{t: t, tbl: tbl}
	got := fx.rows("id", "s")
	want := []string{`id=1 s=x, y`, "id=100 s=late", "id=100 s=late", "id=100 s=late", "id=2 s=z", "id=3 s=a", "id=4 s=null", "id=5 s=b", "id=6 s=p", "id=7 s=null"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows\n%q\nwant\n%q", got, want)
	}
}

func TestS3_WrongCredentialsAreAClearErrorAndCommitNothing(t *testing.T) {
	srv := s3server.Start(t)
	ctx := context.Background()
	good := storage.Config{S3: srv.S3Config()}
	src, err := storage.Open(ctx, srv.Location("landing"), good)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Put(ctx, "a.json", []byte(`{"id":1}`)); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.S3.SecretAccessKey = "wrong"
	tblStore, err := storage.Open(ctx, srv.Location("t"), good)
	if err != nil {
		t.Fatal(err)
	}
	fo, _ := format.ParseOptions(format.JSON, nil, "")
	_, err = Run(ctx, delta.NewTable(tblStore), Options{Source: srv.Location("landing"), Format: fo, Storage: bad, AvailableNow: true, Logger: quiet,
		Checkpoint: srv.Location("ckpt")})
	if err == nil || !strings.Contains(err.Error(), "access denied") {
		t.Fatalf("err = %v, want access denied", err)
	}
	if _, err := delta.NewTable(tblStore).Latest(ctx); err == nil {
		t.Fatalf("a table was created with unreadable source files")
	}
}
