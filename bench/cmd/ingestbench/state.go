package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// stateCmd builds the state of a stream that took -files files (batches of 10,000 keys shaped like
// dated event files, then one compaction) and measures, in a fresh process, what loading it costs.
func stateCmd(args []string) {
	fs := flag.NewFlagSet("state", flag.ExitOnError)
	work := fs.String("work", os.TempDir(), "work directory")
	files := fs.Int("files", 1_000_000, "files taken")
	fs.Parse(args)
	ctx := context.Background()
	dir := filepath.Join(*work, "state")
	os.RemoveAll(dir)
	store, err := storage.NewLocal(dir)
	if err != nil {
		log.Fatal(err)
	}
	st, err := state.Open(ctx, store, state.Metadata{Source: "s3://bench/landing", Format: "json"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	const perBatch = 10_000
	batches := (*files + perBatch - 1) / perBatch
	st.SetCompactEvery(batches)
	start := time.Now()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for b := range batches {
		fl := make([]source.File, 0, perBatch)
		for i := range min(perBatch, *files-b*perBatch) {
			n := b*perBatch + i
			mt := t0.Add(time.Duration(n) * time.Second)
			fl = append(fl, source.File{Key: fmt.Sprintf("%s/events-%08d.json.gz", mt.Format("2006/01/02/15"), n), Size: 4096, ModTime: mt, ETag: fmt.Sprintf("\"%032x\"", n)})
		}
		if _, err := st.Plan(ctx, state.Offsets{Files: fl}); err != nil {
			log.Fatal(err)
		}
		if err := st.MarkCommitted(ctx, state.Commit{BatchID: int64(b)}); err != nil {
			log.Fatal(err)
		}
	}
	build := time.Since(start)
	if ok, err := st.MaybeCompact(ctx); err != nil || !ok {
		log.Fatalf("compaction: %v %v", ok, err)
	}
	var total, snap int64
	var n int
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
			n++
			if filepath.Base(filepath.Dir(p)) == "taken" {
				snap = info.Size()
			}
		}
		return nil
	})
	self, _ := os.Executable()
	m, out, err := runstats.Measure(exec.Command(self, "state-load", "-dir", dir))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("state: %d files taken in %d batches (built in %.1f s); after compaction %d state files, %.1f MB (taken-files snapshot %.1f MB, %.1f bytes a file)\n",
		*files, batches, build.Seconds(), n, float64(total)/1e6, float64(snap)/1e6, float64(snap)/float64(*files))
	fmt.Printf("state load in a fresh process: %s; process wall %.2f s, peak RSS %d MiB\n", out, m.Wall.Seconds(), m.RSSKB/1024)
}

func stateLoadCmd(args []string) {
	fs := flag.NewFlagSet("state-load", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory")
	fs.Parse(args)
	store, err := storage.NewLocal(*dir)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	st, err := state.Open(context.Background(), store, state.Metadata{Source: "s3://bench/landing", Format: "json"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	load := time.Since(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("%d taken files loaded in %.3f s, heap %.1f MiB", st.Taken.Len(), load.Seconds(), float64(ms.HeapAlloc)/(1<<20))
	runtime.KeepAlive(st)
}
