package delta

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltakeeper/deltakeeper/internal/testutil/killedwriter"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestHelperProcessKilledWriter(t *testing.T) { killedwriter.Run(t) }

func leftoverKeys(t *testing.T, store storage.Store) []string {
	t.Helper()
	var out []string
	for lo, err := range storage.Leftovers(context.Background(), store, "") {
		must(t, err)
		out = append(out, lo.Key)
	}
	slices.Sort(out)
	return out
}

// A checkpoint writer SIGKILLed mid-write leaves a temp file (disk) or an incomplete upload (S3) in
// _delta_log that nothing read or deleted. Log cleanup removes it once older than the log retention,
// and leaves the data directories' leftovers to vacuum.
func TestCleanupLog_RemovesWhatKilledWritersLeftInTheLogOnceOlderThanTheRetention(t *testing.T) {
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			var store storage.Store
			var cfg storage.S3Config
			if backend == "local" {
				store = newTestStore(t)
			} else {
				srv := s3server.Start(t)
				cfg = srv.S3Config()
				var err error
				store, err = storage.Open(ctx, srv.Location("t"), storage.Config{S3: cfg})
				must(t, err)
			}
			b := testTable(t).Prop(PropLogRetentionDuration, "interval 3 days")
			b.clock.Set(time.Now())
			tbl := NewTable(store, WithClock(b.clock))
			_, err := tbl.Create(ctx, CreateOptions{Schema: b.schema, Configuration: b.props})
			must(t, err)
			appendFiles(t, tbl, dataFile("f1.parquet", 1))
			killedwriter.Leave(t, store.Location(), cfg, ClassicCheckpointKey(1))
			killedwriter.Leave(t, store.Location(), cfg, "part-00001-x.c000.zstd.parquet")
			if got := leftoverKeys(t, store); len(got) != 2 {
				t.Fatalf("leftovers %q, want the two killed writes'", got)
			}
			before, err := tbl.Latest(ctx)
			must(t, err)

			res, err := tbl.CleanupLog(ctx)
			must(t, err)
			if len(res.Leftovers) != 0 || res.KeptRecentLeftovers != 1 {
				t.Fatalf("just after the kill: %+v", res)
			}
			b.clock.Advance(5 * 24 * time.Hour)
			res, err = tbl.CleanupLog(ctx)
			must(t, err)
			got := leftoverKeys(t, store)
			if len(res.Leftovers) != 1 || res.LeftoverBytes < 3*killedwriter.PartSize || len(got) != 1 || filepath.Dir(got[0]) == "_delta_log" {
				t.Fatalf("result %+v, leftovers %q: want the checkpoint's removed and the data file's kept", res, got)
			}
			after, err := tbl.Latest(ctx)
			must(t, err)
			compareSnapshots(t, before, after)
		})
	}
}

// The retention goes by modification time; other writers' temp files in the log stay, and so do
// uploads of log files deltakeeper never uploads in parts.
func TestCleanupLog_LeftoverRetentionGoesByModificationTimeAndSparesOtherWriters(t *testing.T) {
	ctx := context.Background()
	b := testTable(t).Prop(PropLogRetentionDuration, "interval 3 days")
	b.clock.Set(time.Now())
	tbl, _ := b.Create()
	appendFiles(t, tbl, dataFile("f1.parquet", 1))
	root := tbl.Store().(*storage.LocalStore).Root()
	write := func(key string, mtime time.Time) {
		p := filepath.Join(root, filepath.FromSlash(key))
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, make([]byte, 100), 0o644))
		must(t, os.Chtimes(p, mtime, mtime))
	}
	old := time.Now().Add(-10 * 24 * time.Hour)
	ours := []string{
		LogDir + storage.TempName("00000000000000000002.json"),
		LogDir + storage.TempName("_last_checkpoint"),
		LogDir + "._last_checkpoint.tmp-1804289383", // os.CreateTemp's name, used before TempName
		SidecarDir + storage.TempName("00000000000000000001.checkpoint.0000000001.0000000002.parquet"),
	}
	theirs := []string{
		LogDir + ".00000000000000000002.json.5f7c4b0e-6c4b-4c1e-9d0e-2a3b4c5d6e7f.tmp", // Spark's HDFSLogStore
		LogDir + "_commit_5f7c4b0e-6c4b-4c1e-9d0e-2a3b4c5d6e7f.json.tmp",               // delta-rs
		LogDir + ".00000000000000000001.json.crc",                                      // Hadoop
	}
	young := LogDir + storage.TempName("00000000000000000003.json")
	for _, k := range append(slices.Clone(ours), theirs...) {
		write(k, old)
	}
	write(young, time.Now())
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	slices.Sort(ours)
	got := slices.Sorted(slices.Values(res.Leftovers))
	if !slices.Equal(got, ours) || res.LeftoverBytes != int64(100*len(ours)) || res.KeptRecentLeftovers != 1 {
		t.Fatalf("removed %q (%d bytes, %d kept)\nwant    %q", got, res.LeftoverBytes, res.KeptRecentLeftovers, ours)
	}
	for _, k := range append(theirs, young) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
	// Cleanup of expired log files is disabled: leftovers, which are not history, still go.
	b2 := testTable(t).Prop(PropEnableExpiredLogCleanup, "false")
	b2.clock.Set(time.Now())
	tbl2, _ := b2.Create()
	root = tbl2.Store().(*storage.LocalStore).Root()
	write(ours[0], old.Add(-30*24*time.Hour)) // beyond the default 30 days
	res, err = tbl2.CleanupLog(ctx)
	must(t, err)
	if len(res.Leftovers) != 1 || len(res.Deleted) != 0 {
		t.Fatalf("with %s=false: %+v", PropEnableExpiredLogCleanup, res)
	}
}

func TestCleanupLog_AbortsOnlyCheckpointUploads(t *testing.T) {
	ctx := context.Background()
	srv := s3server.Start(t)
	store, err := storage.Open(ctx, srv.Location("t"), storage.Config{S3: srv.S3Config()})
	must(t, err)
	clock := newFakeClock(time.Now())
	tbl := NewTable(store, WithClock(clock))
	b := testTable(t)
	_, err = tbl.Create(ctx, CreateOptions{Schema: b.schema})
	must(t, err)
	s3st := store.(*storage.S3Store)
	for _, k := range []string{ClassicCheckpointKey(0), LogDir + "00000000000000000000.checkpoint.80a083e8-7026-4e79-81be-64bd76c43a11.parquet"} {
		_, err := s3st.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s3st.Bucket()), Key: aws.String("t/" + k)})
		must(t, err)
	}
	clock.Advance(40 * 24 * time.Hour)
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	if !slices.Equal(res.Leftovers, []string{ClassicCheckpointKey(0)}) {
		t.Fatalf("removed %q", res.Leftovers)
	}
	if got := leftoverKeys(t, store); len(got) != 1 {
		t.Fatalf("uploads left %q, want the UUID checkpoint's", got)
	}
}
