package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
)

func TestAdmit_LimitsAsDatabricksDocumentsThem(t *testing.T) {
	files := func(sizes ...int64) []source.File {
		out := make([]source.File, len(sizes))
		for i, s := range sizes {
			out[i] = source.File{Key: fmt.Sprint(i), Size: s}
		}
		return out
	}
	const mi = 1 << 20
	three := files(3*mi, 3*mi, 3*mi, 3*mi, 3*mi, 3*mi)
	for _, tc := range []struct {
		name  string
		files []source.File
		l     Limits
		want  int
	}{
		{"max files", files(1, 1, 1, 1, 1), Limits{MaxFiles: 3}, 3},
		{"soft byte cap: the file crossing it is taken", three, Limits{MaxFiles: 1000, MaxBytes: 10 * mi}, 4},
		{"byte cap reached exactly stops", files(5*mi, 5*mi, 5*mi), Limits{MaxFiles: 1000, MaxBytes: 10 * mi}, 2},
		{"one file larger than the cap is still taken", files(3<<30, 1), Limits{MaxFiles: 1000, MaxBytes: 10 * mi}, 1},
		{"both limits: files lower", three, Limits{MaxFiles: 2, MaxBytes: 10 * mi}, 2},
		{"both limits: bytes lower", three, Limits{MaxFiles: 5, MaxBytes: 10 * mi}, 4},
		{"fewer files than the limits", files(1, 2), Limits{MaxFiles: 10, MaxBytes: 100}, 2},
		{"nothing", nil, Limits{MaxFiles: 10}, 0},
	} {
		if got := Admit(tc.files, tc.l); got != tc.want {
			t.Errorf("%s: Admit = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestSortOldestFirst_ModificationTimeThenKey(t *testing.T) {
	t0 := time.Unix(1000, 0)
	files := []source.File{{Key: "b", ModTime: t0}, {Key: "z", ModTime: t0.Add(-time.Second)}, {Key: "a", ModTime: t0}}
	SortOldestFirst(files)
	if got := files[0].Key + files[1].Key + files[2].Key; got != "zab" {
		t.Fatalf("order %s, want zab", got)
	}
}

func TestRun_TenThousandSmallFilesWithDefaultsTakeTenBatches(t *testing.T) {
	fx := newFixture(t)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10_000 {
		p := filepath.Join(fx.src, fmt.Sprintf("d%02d/f%05d.json", i%10, i))
		if i < 10 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(p, fmt.Appendf(nil, `{"id":%d}`+"\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime.Add(time.Duration(i)*time.Millisecond), mtime.Add(time.Duration(i)*time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	optimized := true
	o.OptimizeWrite = &optimized
	rep := fx.run(o)
	if len(rep.Batches) != 10 {
		t.Fatalf("%d batches, want 10", len(rep.Batches))
	}
	for _, b := range rep.Batches {
		if b.Files != 1000 || b.Rows != 1000 {
			t.Errorf("batch %d: %d files, %d rows, want 1000 of each", b.BatchID, b.Files, b.Rows)
		}
	}
	if rep.Backlog.Files != 0 {
		t.Errorf("availableNow left a backlog of %d files", rep.Backlog.Files)
	}
	// Files are taken oldest first: batch 0 holds the first thousand written.
	first := fx.rows("id")
	if len(first) != 10_000 {
		t.Fatalf("%d rows, want 10000", len(first))
	}
}

func TestRun_ByteLimitIsSoftAndTheLowerLimitWins(t *testing.T) {
	fx := newFixture(t)
	// Six files of 3 MiB each: one row, padded with blank lines (skipped by the reader).
	pad := strings.Repeat(" \n", (3<<20)/2-32)
	for i := range 6 {
		fx.put(fmt.Sprintf("f%d.json", i), fmt.Sprintf(`{"id":%d}`+"\n", i)+pad)
	}
	o := fx.options(format.JSON, nil, "")
	o.MaxBytesPerTrigger = 10 << 20
	o.MaxBatches = 1
	rep := fx.run(o)
	if len(rep.Batches) != 1 || rep.Batches[0].Files != 4 {
		t.Fatalf("batches %+v, want one batch of 4 files (3 MiB files under a soft 10 MiB cap)", rep.Batches)
	}
	if rep.Backlog.Files != 2 || rep.Backlog.Bytes < 5<<20 {
		t.Fatalf("backlog %+v, want the 2 remaining files", rep.Backlog)
	}
	// Both limits: the file limit is lower now.
	o.MaxFilesPerTrigger = 1
	rep = fx.run(o)
	if len(rep.Batches) != 1 || rep.Batches[0].Files != 1 {
		t.Fatalf("batches %+v, want one batch of 1 file (maxFilesPerTrigger 1 is the lower limit)", rep.Batches)
	}
	// Changing the limits never resets the stream: the last run drains the rest.
	o.MaxFilesPerTrigger, o.AvailableNow = 1000, true
	rep = fx.run(o)
	if len(rep.Batches) != 1 || rep.Batches[0].Files != 1 || rep.Backlog.Files != 0 || rep.LastBatchID != 2 {
		t.Fatalf("drain: batches %+v backlog %+v last %d", rep.Batches, rep.Backlog, rep.LastBatchID)
	}
	if got := len(fx.rows("id")); got != 6 {
		t.Fatalf("%d rows, want 6", got)
	}
}
