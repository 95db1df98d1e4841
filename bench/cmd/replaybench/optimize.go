package main

import (
	"bufio"
	"context"
	"fmt"
	"math/big"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// freshDay is the partition the optimize step appends real files to: the generated table's own files
// have no data behind them, so only a partition written for real can be rewritten.
const freshDay = "2099-01-01"

// runOptimize plans and commits an OPTIMIZE on the 1,000,000-file table, phase by phase, printing
// one JSON line per phase with its time and the process's peak RSS so far (VmHWM) and live heap.
// only runs one group of phases, so that each process's peak RSS is that group's: "plan" (1, 2),
// "append" (3), "commit" (1, 4); "" runs them all. "commit-all" (commitall.go) commits the removal of
// every file instead:
//  1. load the latest snapshot;
//  2. plan a compaction of every file (dry run: the plan bin-packs all 1,000,000 candidates);
//  3. append `small` real files to partition freshDay (one commit each, as small writers do);
//  4. OPTIMIZE WHERE day = freshDay: plan over every live file, rewrite the real ones, commit on the
//     1,000,000-file snapshot.
func runOptimize(ctx context.Context, dir string, small int, only string, run optimizeRun) error {
	store, err := storage.NewLocal(dir)
	if err != nil {
		return err
	}
	tbl := delta.NewTable(store)
	start := time.Now()
	snap, err := run.load(ctx, tbl)
	if err != nil {
		return err
	}
	phase("load", start, map[string]any{"files": snap.NumFiles(), "full": run.full})
	if only == "commit-all" {
		return commitAll(ctx, snap, run)
	}
	if only == "" || only == "plan" {
		rep, err := planAll(ctx, snap)
		if err == nil && only == "plan" {
			err = run.profile(rep)
		}
		if err != nil || only == "plan" {
			return err
		}
	}
	if only == "" || only == "append" {
		if err := appendSmall(ctx, tbl, small); err != nil || only == "append" {
			return err
		}
		start = time.Now()
		if snap, err = run.load(ctx, tbl); err != nil {
			return err
		}
		phase("reload", start, map[string]any{"files": snap.NumFiles()})
	}
	want, err := commitWhere(ctx, snap, run)
	if err != nil {
		return err
	}
	// Not part of the measurement: the snapshot and the report above are garbage by now.
	after, err := run.load(ctx, tbl)
	if err != nil {
		return err
	}
	if after.NumFiles() != want {
		return fmt.Errorf("after the commit %d live files, want %d", after.NumFiles(), want)
	}
	return nil
}

// optimizeRun is how the optimize measurement loads its snapshots and what it records.
type optimizeRun struct {
	full       bool   // every file's statistics, as before optimize.LoadOptions
	memProfile string // heap profile after the plan or the commit
}

func (r optimizeRun) load(ctx context.Context, tbl *delta.Table) (*delta.Snapshot, error) {
	if r.full {
		return tbl.Latest(ctx)
	}
	return tbl.LatestWith(ctx, optimize.LoadOptions)
}

// profile writes the heap profile while rep (and its snapshot) is still live.
func (r optimizeRun) profile(rep *optimize.Report) error {
	if r.memProfile == "" {
		return nil
	}
	f, err := os.Create(r.memProfile)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	err = pprof.Lookup("heap").WriteTo(f, 0)
	runtime.KeepAlive(rep)
	return err
}

// planAll plans a compaction of every file (dry run).
func planAll(ctx context.Context, snap *delta.Snapshot) (*optimize.Report, error) {
	start := time.Now()
	rep, err := optimize.RunSnapshot(ctx, snap, optimize.Options{DryRun: true, MaxDeletedRowsRatio: optimize.DefaultMaxDeletedRowsRatio}, nil)
	if err != nil {
		return nil, err
	}
	n, bytes := rep.Plan.Files()
	phase("plan-all", start, map[string]any{"bins": len(rep.Plan.Bins), "files": n, "bytes": bytes, "msg": rep.Op.Message})
	return rep, nil
}

// appendSmall appends small real files to partition freshDay, one commit each.
func appendSmall(ctx context.Context, tbl *delta.Table, small int) error {
	start := time.Now()
	for i := range small {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return err
		}
		if _, err := table.Append(ctx, snap, freshRows(i, 5000), table.WriteOptions{TargetFileSize: 1 << 40}); err != nil {
			return err
		}
	}
	phase("append", start, map[string]any{"files": small})
	return nil
}

// commitWhere compacts partition freshDay: the plan considers every live file, the commit lands on the
// 1,000,000-file snapshot. It returns the number of live files the commit leaves.
func commitWhere(ctx context.Context, snap *delta.Snapshot, run optimizeRun) (int, error) {
	where, err := expr.Parse("day = '" + freshDay + "'")
	if err != nil {
		return 0, err
	}
	start := time.Now()
	rep, err := optimize.RunSnapshot(ctx, snap, optimize.Options{Where: where, MaxDeletedRowsRatio: optimize.DefaultMaxDeletedRowsRatio}, nil)
	if err != nil {
		return 0, err
	}
	phase("optimize-where", start, map[string]any{"considered": rep.Plan.ConsideredFiles, "removed": rep.FilesRemoved,
		"added": rep.FilesAdded, "commits": fmt.Sprint(rep.Commits), "msg": rep.Op.Message})
	if err := run.profile(rep); err != nil {
		return 0, err
	}
	return snap.NumFiles() - rep.FilesRemoved + rep.FilesAdded, nil
}

// freshRows are n rows of the table's schema in partition freshDay.
func freshRows(file, n int) []types.Struct {
	day := types.Date(time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC).Unix() / 86400)
	rows := make([]types.Struct, n)
	for i := range rows {
		id := int64(file*n + i)
		rows[i] = types.Struct{id, types.Timestamp(id * 1_000_000), "eu-west", types.DecimalValue{Unscaled: big.NewInt(id % 100_000), Scale: 2}, day}
	}
	return rows
}

func phase(name string, start time.Time, m map[string]any) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	parts := []string{fmt.Sprintf(`"phase":%q`, name), fmt.Sprintf(`"s":%.2f`, time.Since(start).Seconds()),
		fmt.Sprintf(`"peakRSSMiB":%d`, vmHWM()>>20), fmt.Sprintf(`"heapInuseMiB":%d`, ms.HeapInuse>>20)}
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%q", k, fmt.Sprint(v)))
	}
	fmt.Println("{" + strings.Join(parts, ",") + "}")
}

// vmHWM is the process's peak resident set.
func vmHWM() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}
