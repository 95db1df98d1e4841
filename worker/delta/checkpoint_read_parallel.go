package delta

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
)

// ckSource is one Parquet file of a checkpoint: a part, or a sidecar.
type ckSource struct {
	f *ckFile
	// sidecar is the sidecar's path as the checkpoint lists it ("" for a checkpoint part): errors
	// name it.
	sidecar string
}

func (s *ckSource) wrap(err error) error {
	if s.sidecar != "" {
		return fmt.Errorf("sidecar %s: %w", s.sidecar, err)
	}
	return err
}

// ckTask is a unit of decoding: a range of rows of one source, or the whole source when it is
// read with stats_parsed in step.
type ckTask struct {
	src *ckSource
	req parquetReadRequest
	r   ckRange
	out chan ckResult
}

type ckResult struct {
	items []ckItem
	err   error
}

// minTaskRows is the smallest range of rows worth a task of its own (a variable for tests).
var minTaskRows int64 = 1 << 16

// taskRows is the size of the ranges the file actions of checkpoints of totalRows rows are
// decoded in: about two ranges per core, so that neither core waits long for the other at the
// end. More would cost more: a range decodes the pages of the map columns before it to count
// their rows.
func taskRows(totalRows int64) int64 {
	return max(minTaskRows, totalRows/int64(2*runtime.GOMAXPROCS(0)))
}

// wholeFileTasks reads each source with one task (row group by row group): for the non-file
// actions, which are few and mostly in maps and lists, ranges would not pay.
func wholeFileTasks(srcs []*ckSource, req parquetReadRequest) []*ckTask {
	tasks := make([]*ckTask, len(srcs))
	for i, src := range srcs {
		tasks[i] = &ckTask{src: src, req: req, r: wholeFile}
	}
	return tasks
}

// rangeTasks splits the reading of the sources' file actions into ranges of about size rows; a
// source read with stats_parsed in step is one task.
func rangeTasks(srcs []*ckSource, req parquetReadRequest, size int64) []*ckTask {
	var tasks []*ckTask
	for _, src := range srcs {
		sch := src.f.readSchemas(req)
		if len(sch.columns.Fields) == 0 {
			continue
		}
		if sch.statsParsed != nil {
			tasks = append(tasks, &ckTask{src: src, req: req, r: wholeFile})
			continue
		}
		for rg := range src.f.pf.NumRowGroups() {
			rows := src.f.pf.RowGroup(rg).NumRows
			parts := max(1, (rows+size/2)/size)
			for i := range parts {
				first := rows * i / parts
				r := ckRange{rg: rg, first: first, n: rows*(i+1)/parts - first}
				if i == parts-1 {
					r.n = 0 // to the end, which checks that every column ends with the row group
				}
				tasks = append(tasks, &ckTask{src: src, req: req, r: r})
			}
		}
	}
	return tasks
}

// runCkTasks decodes the tasks and applies their actions in task order, row by row. The
// decoding is spread over GOMAXPROCS goroutines; reconciliation runs on the calling goroutine
// only, so it stays sequential. Decoders run ahead of it without bound: what they produce is the
// snapshot's own AddFiles, which are kept anyway.
func runCkTasks(ctx context.Context, tasks []*ckTask, st *replayState) error {
	workers := min(runtime.GOMAXPROCS(0), len(tasks))
	if workers <= 1 {
		d := newCkDecoder(st.seed)
		d.in = st.in
		d.rowCountsOnly = st.rowCountsOnly
		for _, task := range tasks {
			err := task.src.f.read(ctx, task.req, task.r, d, func(items []ckItem) error {
				st.applyItems(items)
				putItems(items)
				return nil
			})
			if err != nil {
				return task.src.wrap(err)
			}
		}
		return nil
	}

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	for _, task := range tasks {
		// Room for every batch the task can produce and its error: a decoder never waits for
		// the reconciliation, and an early return (an error) never leaves one blocked.
		f := task.src.f.pf
		task.out = make(chan ckResult, int(f.NumRows())/checkpointBatchSize+f.NumRowGroups()+2)
	}
	var next atomic.Int64
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := newCkDecoder(st.seed)
			d.rowCountsOnly = st.rowCountsOnly
			for {
				i := int(next.Add(1)) - 1
				if i >= len(tasks) {
					return
				}
				task := tasks[i]
				err := ctx.Err()
				if err == nil {
					err = task.src.f.read(ctx, task.req, task.r, d, func(items []ckItem) error {
						task.out <- ckResult{items: items}
						return nil
					})
				}
				if err != nil {
					task.out <- ckResult{err: err}
				}
				close(task.out)
			}
		}()
	}
	for _, task := range tasks {
		for r := range task.out {
			if r.err != nil {
				return task.src.wrap(r.err)
			}
			st.applyItems(r.items)
			putItems(r.items)
		}
	}
	return nil
}
