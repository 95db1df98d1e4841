package cluster_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// fullOpts is a FULL run on enough rows for the sort, the curve table and the row-group plan to be
// split among the workers (more than 2^16 rows), in many small outputs.
func fullOpts(parallelism int) cluster.Options {
	return opts(func(o *cluster.Options) {
		o.Full = true
		o.Parallelism = parallelism
		o.TargetFileSize = 256 << 10
	})
}

// outputs describes every data file the snapshot references by a hash of its rows in file order
// and its row groups' sizes, sorted: what FULL wrote, row for row and cut for cut. (Not the bytes:
// the pooled column encoders of parquetio.Permute may cut a page differently depending on which
// output used them before, on main as well.)
func outputs(t *testing.T, f *fixture) []string {
	t.Helper()
	snap := f.latest()
	var out []string
	for _, a := range snap.Files() {
		key, err := delta.ObjectKey(snap.Table().Location(), a.Path)
		if err != nil {
			t.Fatal(err)
		}
		r, err := f.store.Open(f.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquetio.Open(f.ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for g := range pf.NumRowGroups() {
			fmt.Fprintf(h, "group of %d rows\n", pf.RowGroup(g).NumRows)
		}
		rr, err := pf.Rows(f.ctx, snap.Schema(), parquetio.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, row := range b.Rows {
				fmt.Fprintf(h, "%v\n", row)
			}
		}
		rr.Close()
		r.Close()
		out = append(out, fmt.Sprintf("%x", h.Sum(nil)))
	}
	slices.Sort(out)
	return out
}

// The sort, the cut and the row-group plan run on several workers, and the outputs are written and
// closed in the background; none of it may change a row or a cut of what FULL writes.
func TestOptimizeFull_WritesTheSameFilesWhateverTheParallelism(t *testing.T) {
	rows := eventRows(150_000, 0, 42)
	var want []string
	for _, par := range []int{1, 2, 5} {
		f := newFixture(t, nil)
		f.appendFiles(rows, 6)
		f.clusterBy("a", "b")
		before := f.rows()
		f.optimize(fullOpts(par))
		sameRows(t, before, f.rows())
		got := outputs(t, f)
		if len(got) < 4 {
			t.Fatalf("parallelism %d: %d files, want several outputs", par, len(got))
		}
		if want == nil {
			want = got
			continue
		}
		if !slices.Equal(got, want) {
			t.Fatalf("parallelism %d: the outputs differ from those of parallelism 1", par)
		}
	}
}

// failingStore fails the Close of the n-th data file created (an fsync or an upload that fails).
type failingStore struct {
	storage.Store
	n     int32
	count atomic.Int32
}

var errInjected = errors.New("injected close failure")

func (s *failingStore) Create(ctx context.Context, key string) (storage.Writer, error) {
	w, err := s.Store.Create(ctx, key)
	if err != nil || !strings.HasSuffix(key, ".parquet") || s.count.Add(1) != s.n {
		return w, err
	}
	return failingClose{w}, nil
}

type failingClose struct{ storage.Writer }

func (w failingClose) Close() error {
	_ = w.Abort()
	return errInjected
}

// An output whose background close fails fails the run, and the run leaves no file behind: every
// output it wrote, before or after the failure, is deleted, and the table is unchanged.
func TestOptimizeFull_AFailedOutputCloseFailsTheRunAndLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	local, err := storage.Open(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	store := &failingStore{Store: local} // fails nothing until n is set
	f := newFixtureOn(t, store, nil)
	f.appendFiles(eventRows(150_000, 0, 42), 6)
	f.clusterBy("a", "b")
	version := f.latest().Version()
	files := func() []string {
		var out []string
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(p, "_delta_log") {
				out = append(out, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	inputs := files()
	store.count.Store(0)
	store.n = 3
	_, err = cluster.Optimize(f.ctx, f.tbl, f.latest(), fullOpts(2), nil)
	if !errors.Is(err, errInjected) {
		t.Fatalf("optimize: %v, want the injected close failure", err)
	}
	if got := files(); !slices.Equal(got, inputs) {
		t.Fatalf("files after the failed run:\n%v\nwant the inputs only:\n%v", got, inputs)
	}
	if v := f.latest().Version(); v != version {
		t.Fatalf("table at version %d after the failed run, want %d", v, version)
	}
}
