package vacuum

import (
	"context"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/deltakeeper/deltakeeper/internal/testutil/killedwriter"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestHelperProcessKilledWriter(t *testing.T) { killedwriter.Run(t) }

// leftoverKeys lists the store's leftovers (temp files, incomplete uploads) by key.
func leftoverKeys(t *testing.T, store storage.Store) []string {
	t.Helper()
	var out []string
	for lo, err := range storage.Leftovers(t.Context(), store, "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lo.Key)
	}
	slices.Sort(out)
	return out
}

// Writers SIGKILLed mid-write leave a temp file (disk) or an incomplete multipart upload (S3) that no
// listing shows. Full vacuum removes the ones in data directories once older than the retention, and
// leaves the log's to log cleanup.
func TestVacuum_RemovesWhatKilledWritersLeftInDataDirectoriesOnceOlderThanTheRetention(t *testing.T) {
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			var store storage.Store
			var cfg storage.S3Config
			if backend == "local" {
				store = localStore(t)
			} else {
				srv := s3server.Start(t)
				cfg = srv.S3Config()
				var err error
				if store, err = storage.Open(t.Context(), srv.Location("orders"), storage.Config{S3: cfg}); err != nil {
					t.Fatal(err)
				}
			}
			tbl, _ := compactedTable(t, store)
			rows := scanRows(t, tbl)
			data := "order_date=2024-01-01/" + delta.DataFileName(7, "zstd")
			killedwriter.Leave(t, store.Location(), cfg, data)
			killedwriter.Leave(t, store.Location(), cfg, delta.ClassicCheckpointKey(3))
			if got := leftoverKeys(t, store); len(got) != 2 {
				t.Fatalf("leftovers of the killed writers %q, want 2", got)
			}
			before := stored(t, store)

			// Just after the kill, the leftovers are younger than the retention: kept.
			rep := vacuumAt(t, tbl, Options{}, 0)
			if rep.Leftovers != 0 || rep.KeptRecentLeftovers != 1 || len(leftoverKeys(t, store)) != 2 {
				t.Fatalf("report %+v, leftovers %q", rep, leftoverKeys(t, store))
			}
			// Eight days later, the data directory's goes; the log's stays for log cleanup.
			rep = vacuumAt(t, tbl, Options{}, 8*24*time.Hour)
			got := leftoverKeys(t, store)
			if len(got) != 1 || path.Dir(got[0]) != "_delta_log" {
				t.Fatalf("leftovers after vacuum %q, want only the checkpoint's", got)
			}
			if rep.Leftovers != 1 || rep.LeftoversRemoved != 1 || rep.LeftoverBytesRemoved < 3*killedwriter.PartSize || // S3 holds the parts sent, not the buffered rest

				rep.Op.TempFilesRemoved != 1 || rep.Op.TempBytesRemoved != rep.LeftoverBytesRemoved || rep.Op.Outcome != result.Succeeded {
				t.Errorf("report %+v, op %+v", rep, rep.Op)
			}
			if got := scanRows(t, tbl); !slices.Equal(got, rows) {
				t.Fatal("the table reads differently after vacuum")
			}
			// Nothing else changed but what vacuum deletes anyway (compacted inputs, orphans).
			for key := range stored(t, store) {
				if _, ok := before[key]; !ok {
					t.Errorf("%s appeared", key)
				}
			}
		})
	}
}

// The retention rule goes by the temp file's modification time; other writers' hidden files and
// hidden directories are never touched, and a dry run removes nothing.
func TestVacuum_LeftoverRetentionGoesByModificationTimeAndSparesOtherWriters(t *testing.T) {
	store := localStore(t)
	tbl, _ := compactedTable(t, store)
	root := store.(*storage.LocalStore).Root()
	old := time.Now().Add(-10 * 24 * time.Hour)
	write := func(key string, mtime time.Time) {
		p := filepath.Join(root, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	oldOurs := []string{
		"order_date=2024-01-01/" + storage.TempName(delta.DataFileName(1, "zstd")),
		storage.TempName(delta.DataFileName(2, "zstd")),
		"order_date=2024-01-02/.part-00003-x.c000.zstd.parquet.tmp-2894631756", // the naming before TempName
	}
	young := "order_date=2024-01-01/" + storage.TempName(delta.DataFileName(4, "zstd"))
	spared := []string{
		"order_date=2024-01-01/.part-00001-x.c000.zstd.parquet.crc", // Hadoop's checksum
		".part-00005-x.c000.zstd.parquet.tmp",                       // some other writer's temp
		"_staging/" + storage.TempName("part-6.parquet"),            // inside a hidden directory
		"_delta_log/" + storage.TempName("00000000000000000009.json"),
	}
	for _, k := range append(slices.Clone(oldOurs), spared...) {
		write(k, old)
	}
	write(young, time.Now())

	dry := vacuumAt(t, tbl, Options{DryRun: true}, 0)
	if dry.Leftovers != int64(len(oldOurs)) || dry.LeftoverBytes != int64(1000*len(oldOurs)) || dry.LeftoversRemoved != 0 || dry.KeptRecentLeftovers != 1 {
		t.Fatalf("dry run %+v", dry)
	}
	if len(leftoverKeys(t, store)) != len(oldOurs)+3 {
		t.Fatalf("the dry run removed leftovers: %q", leftoverKeys(t, store))
	}
	rep := vacuumAt(t, tbl, Options{}, 0)
	if rep.LeftoversRemoved != int64(len(oldOurs)) || rep.Op.TempBytesRemoved != int64(1000*len(oldOurs)) {
		t.Fatalf("report %+v", rep)
	}
	for _, k := range oldOurs {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); !os.IsNotExist(err) {
			t.Errorf("old temp %s is still there (%v)", k, err)
		}
	}
	for _, k := range append(spared, young) {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(k))); err != nil {
			t.Errorf("%s was removed: %v", k, err)
		}
	}
}

// On S3 an incomplete upload is vacuum's only when its target is a data file name deltakeeper writes:
// another writer's (Spark names its files "…-c000.snappy.parquet") is left alone.
func TestVacuum_AbortsOnlyDeltakeepersUploads(t *testing.T) {
	srv := s3server.Start(t)
	store, err := storage.Open(t.Context(), srv.Location("orders"), storage.Config{S3: srv.S3Config()})
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := compactedTable(t, store)
	s3st := store.(*storage.S3Store)
	start := func(key string) {
		_, err := s3st.Client().CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{
			Bucket: aws.String(s3st.Bucket()), Key: aws.String("orders/" + key)})
		if err != nil {
			t.Fatal(err)
		}
	}
	ours := "order_date=2024-01-01/" + delta.DataFileName(3, "zstd")
	theirs := []string{
		"order_date=2024-01-01/part-00000-9f3c1a52-6d4e-4b8a-9c1d-2e3f4a5b6c7d-c000.snappy.parquet",
		"_hidden/" + delta.DataFileName(4, "zstd"),
	}
	for _, k := range append([]string{ours}, theirs...) {
		start(k)
	}
	rep := vacuumAt(t, tbl, Options{}, 8*24*time.Hour)
	if rep.LeftoversRemoved != 1 {
		t.Fatalf("report %+v", rep)
	}
	slices.Sort(theirs)
	if got := leftoverKeys(t, store); !slices.Equal(got, theirs) {
		t.Fatalf("uploads left %q, want %q", got, theirs)
	}
}
