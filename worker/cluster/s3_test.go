package cluster_test

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestOptimize_OnS3KeepsRowsAndReadsWavesFromLocalCopies(t *testing.T) {
	srv := s3server.Start(t)
	cfg := storage.Config{S3: storage.S3Config{Endpoint: srv.Endpoint, Region: s3server.Region,
		AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey, UsePathStyle: true}}
	store, err := storage.Open(context.Background(), srv.Location("lake/events"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, store, nil)
	f.appendFiles(eventRows(400_000, 0, 5), 4) // ≈ 24 MB decoded: waves under a 16 MiB limit
	f.clusterBy("b", "a")
	before := f.rows()
	var waves int
	var copied int64
	defer cluster.SetRewriteHook(func(w int, b int64) { waves, copied = w, b })()
	op := f.optimize(opts(func(o *cluster.Options) {
		o.MemoryLimit = 16 << 20
		o.TempDir = t.TempDir()
		o.TargetFileSize = 256 << 10
	}))
	if op.Outcome != result.Succeeded || op.FilesRemoved != 4 || waves < 2 || copied == 0 {
		t.Fatalf("op = %+v, waves %d, %d bytes copied; want the 4 files rewritten in waves from local copies", op, waves, copied)
	}
	sameRows(t, before, f.rows())

	f.appendFiles(eventRows(500, 400_000, 6), 2)
	before = f.rows()
	if op := f.optimize(opts(nil)); op.Outcome != result.Succeeded || op.FilesRemoved != 2 {
		t.Fatalf("incremental run: %+v", op)
	}
	sameRows(t, before, f.rows())
}
