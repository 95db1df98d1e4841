package storage_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

const envAbandonKey = "DELTAKEEPER_STORAGE_TEST_ABANDON_KEY"

// abandonWriteHelper runs in a child process: it starts a streaming write of the key, sends more than
// one S3 part, says "ready" and waits to be killed, as a writer SIGKILLed mid-write would be.
func abandonWriteHelper() int {
	ctx := context.Background()
	cfg := storage.ConfigFromEnv()
	cfg.S3.PartSize = testPartSize
	cfg.Azure.BlockSize = testPartSize
	cfg.GCS.ChunkSize = testGCSChunkSize
	st, err := storage.Open(ctx, os.Getenv(envLocation), cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := st.Create(ctx, os.Getenv(envAbandonKey))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// More than one S3 part or Azure block, and more than one GCS chunk.
	if _, err := w.Write(randomBytes(7, max(3*testPartSize, testGCSChunkSize)+100)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
	return 0
}

// killWriterMidWrite starts abandonWriteHelper on key and SIGKILLs it once it has written.
func killWriterMidWrite(t *testing.T, b backend, st storage.Store, key string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), b.env(st)...), "DELTAKEEPER_STORAGE_TEST_HELPER=abandon-write",
		"DELTAKEEPER_STORAGE_TEST_LOCATION="+st.Location(), envAbandonKey+"="+key)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill() // the helper misbehaved, which is the failure reported
		_ = cmd.Wait()
		t.Fatalf("writer process did not get ready: %q %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // killed: its error is the signal
}

func leftovers(t *testing.T, st storage.Store, prefix string) []storage.Leftover {
	t.Helper()
	var out []storage.Leftover
	for lo, err := range storage.Leftovers(t.Context(), st, prefix) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, lo)
	}
	return out
}

func TestLeftovers_FindsWhatAKilledWriterLeftAndRemovesIt(t *testing.T) {
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			mustPut(t, st, "day=1/part-0.parquet", []byte("kept"))
			if got := leftovers(t, st, ""); len(got) != 0 {
				t.Fatalf("a fresh store has leftovers %+v", got)
			}
			start := time.Now().Add(-time.Second)
			target := "day=1/part-00001-abc.c000.zstd.parquet"
			killWriterMidWrite(t, b, st, target)
			if b.unlistedDebris != "" {
				// Nothing to find or remove, and nothing visible: the write never happened.
				if got := leftovers(t, st, ""); len(got) != 0 {
					t.Fatalf("leftovers %+v on a store whose debris is unlisted (%s)", got, b.unlistedDebris)
				}
				if keys := listKeys(t, st, "", ""); !slices.Equal(keys, []string{"day=1/part-0.parquet"}) {
					t.Fatalf("after the killed write List shows %q", keys)
				}
				if _, err := st.Stat(t.Context(), target); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("the killed write's target: Stat err = %v, want ErrNotFound", err)
				}
				return
			}
			if got := b.leftovers(t, st); len(got) == 0 {
				t.Fatal("the killed writer left nothing behind: the test does not kill mid-write")
			}
			got := leftovers(t, st, "")
			if len(got) != 1 {
				t.Fatalf("leftovers %+v, want the killed write's", got)
			}
			lo := got[0]
			if lo.Target != target || lo.Size < 3*testPartSize || lo.LastActivity.Before(start) || lo.LastActivity.After(time.Now()) {
				t.Fatalf("leftover %+v: want target %s, at least %d bytes, a time of the last few seconds", lo, target, 3*testPartSize)
			}
			if b.name == "local" && !strings.HasPrefix(path.Base(lo.Key), "."+path.Base(target)+".deltakeeper-tmp-") {
				t.Errorf("temp file %s is not named by TempName", lo.Key)
			}
			// The debris is invisible to readers, and a prefix outside its directory does not see it.
			if keys := listKeys(t, st, "", ""); !slices.Equal(keys, []string{"day=1/part-0.parquet"}) {
				t.Errorf("List shows %q", keys)
			}
			if got := leftovers(t, st, "_delta_log/"); len(got) != 0 {
				t.Errorf("leftovers under _delta_log/: %+v", got)
			}
			if err := storage.RemoveLeftover(t.Context(), st, lo); err != nil {
				t.Fatal(err)
			}
			if got := b.leftovers(t, st); len(got) != 0 {
				t.Errorf("after RemoveLeftover the store still holds %q", got)
			}
			if got := leftovers(t, st, ""); len(got) != 0 {
				t.Errorf("leftovers after removal %+v", got)
			}
			// Removing it again is not an error.
			if err := storage.RemoveLeftover(t.Context(), st, lo); err != nil {
				t.Errorf("second removal: %v", err)
			}
			if _, err := st.Stat(t.Context(), "day=1/part-0.parquet"); err != nil {
				t.Errorf("the object next to the leftover: %v", err)
			}
		})
	}
}

// Only deltakeeper's own temp names are leftovers; other writers' hidden files are not.
func TestLeftovers_RecognisesOnlyDeltakeepersTempNames(t *testing.T) {
	st := localBackend().open(t)
	root := st.(*storage.LocalStore).Root()
	ours := []string{
		"day=1/." + "part-00001-x.c000.zstd.parquet" + strings.TrimPrefix(storage.TempName(""), "."),
		"_delta_log/" + storage.TempName("00000000000000000003.json"),
		"_delta_log/" + storage.TempName("00000000000000000010.checkpoint.parquet"),
		"_delta_log/._last_checkpoint.tmp-3166920219", // os.CreateTemp's name, used before TempName
		".part-00002-y.c000.zstd.parquet.tmp-42",
	}
	theirs := []string{
		"day=1/.part-00001-x.c000.zstd.parquet.crc",                                      // Hadoop checksum
		"_delta_log/.00000000000000000003.json.5f7c4b0e-6c4b-4c1e-9d0e-2a3b4c5d6e7f.tmp", // Spark's HDFSLogStore
		"_delta_log/_commit_5f7c4b0e-6c4b-4c1e-9d0e-2a3b4c5d6e7f.json.tmp",               // delta-rs
		".part-3.parquet.tmp",
		".part-3.parquet.tmp-12345678901", // more digits than os.CreateTemp writes
		".part-3.parquet.deltakeeper-tmp-xyz",
		".part-3.parquet.deltakeeper-tmp-0123456789abcdef0",
		"part-4.parquet.deltakeeper-tmp-0123456789abcdef", // not hidden: an ordinary file
	}
	for _, k := range append(slices.Clone(ours), theirs...) {
		p := filepath.Join(root, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, lo := range leftovers(t, st, "") {
		got = append(got, lo.Key)
		if _, ok := storage.TempTarget(path.Base(lo.Key)); !ok || lo.Size != int64(len(lo.Key)) {
			t.Errorf("leftover %+v", lo)
		}
	}
	slices.Sort(got)
	slices.Sort(ours)
	if !slices.Equal(got, ours) {
		t.Errorf("leftovers %q\nwant      %q", got, ours)
	}
	if lo := (storage.Leftover{Key: theirs[0]}); storage.RemoveLeftover(t.Context(), st, lo) == nil {
		t.Errorf("RemoveLeftover deleted another writer's %s", lo.Key)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(theirs[0]))); err != nil {
		t.Error(err)
	}
}
