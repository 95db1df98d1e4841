package vacuum

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

const (
	envKilledShareDir     = "DELTAKEEPER_VACUUM_SHARE_DIR"
	envKilledShareVersion = "DELTAKEEPER_VACUUM_SHARE_VERSION"
)

// slowDeletes spaces out a store's deletes, so that the parent can kill the vacuum in the middle of them.
type slowDeletes struct {
	storage.Store
}

func (s slowDeletes) Delete(ctx context.Context, key string) error {
	time.Sleep(10 * time.Millisecond)
	return s.Store.Delete(ctx, key)
}

// TestHelperProcessVacuumShare is the child: share 1 of 3 of a retention-0 vacuum, one delete at a time,
// until the parent kills it.
func TestHelperProcessVacuumShare(t *testing.T) {
	dir := os.Getenv(envKilledShareDir)
	if dir == "" {
		return
	}
	v, err := strconv.ParseInt(os.Getenv(envKilledShareVersion), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	var zero time.Duration
	_, err = Run(context.Background(), delta.NewTable(slowDeletes{store}), Options{Retention: &zero, AllowShortRetention: true,
		Parallelism: 1, Share: &Share{Index: 1, Count: 3, Version: delta.Version(v)}}, nil)
	t.Fatalf("the vacuum share finished (%v) before it was killed", err)
}

// A vacuum share SIGKILLed in the middle of its deletes is retried as the same share: the retry deletes
// the rest of that share's part and nothing of the other shares'.
func TestVacuumShares_KilledShareIsRetriedAndDeletesOnlyTheRestOfItsPart(t *testing.T) {
	dir := t.TempDir() + "/orders"
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl, pinned := sharedTable(t, store, 24, true)
	rows := scanRows(t, tbl)
	for d := 1; d <= 6; d++ {
		for i := range 60 {
			if err := store.Put(t.Context(), fmt.Sprintf("order_date=2024-01-%02d/orphan-%03d.parquet", d, i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	parts := make([]map[string]bool, 3)
	for i := range parts {
		parts[i] = dryRunSample(t, tbl, &Share{Index: i, Count: 3, Version: pinned})
	}
	mine := parts[1]
	if len(mine) < 100 {
		t.Fatalf("share 1 has only %d candidates", len(mine))
	}
	gone := func(keys map[string]bool) (n int) {
		now := stored(t, store)
		for k := range keys {
			if _, ok := now[k]; !ok {
				n++
			}
		}
		return n
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessVacuumShare$", "-test.count=1")
	cmd.Env = append(os.Environ(), envKilledShareDir+"="+dir, envKilledShareVersion+"="+strconv.FormatInt(int64(pinned), 10))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for gone(mine) < 10 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deletedBeforeKill := gone(mine)
	if deletedBeforeKill < 10 || deletedBeforeKill == len(mine) {
		t.Fatalf("the killed share deleted %d of its %d files: not killed in the middle of its deletes", deletedBeforeKill, len(mine))
	}

	var zero time.Duration
	rep := vacuumAt(t, tbl, Options{Retention: &zero, AllowShortRetention: true, Share: &Share{Index: 1, Count: 3, Version: pinned}}, time.Minute)
	if rep.FilesDeleted != int64(len(mine)-deletedBeforeKill) || gone(mine) != len(mine) {
		t.Fatalf("the retry deleted %d files; %d of %d were left after the kill, %d of the part are gone now",
			rep.FilesDeleted, len(mine)-deletedBeforeKill, len(mine), gone(mine))
	}
	for _, i := range []int{0, 2} {
		if n := gone(parts[i]); n != 0 {
			t.Errorf("share 1's attempts deleted %d files of share %d's part", n, i)
		}
	}
	if got := scanRows(t, tbl); !slices.Equal(got, rows) {
		t.Fatalf("%d rows after the vacuum, %d before", len(got), len(rows))
	}
}
