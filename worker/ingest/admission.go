package ingest

import (
	"slices"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
)

// Limits are a batch's admission limits, as Databricks documents them: at most MaxFiles files; and,
// when MaxBytes > 0, files are taken until the batch reaches MaxBytes (a soft maximum: the file that
// crosses it is still taken, so a batch always takes at least one file). Whichever limit is reached
// first ends the batch.
type Limits struct {
	MaxFiles int
	MaxBytes int64
}

// SortOldestFirst orders files by modification time, then key: the order batches take them in.
func SortOldestFirst(files []source.File) {
	slices.SortFunc(files, func(a, b source.File) int {
		if c := a.ModTime.Compare(b.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// Admit returns how many of the (oldest-first) files the next batch takes.
func Admit(files []source.File, l Limits) int {
	var bytes int64
	for i, f := range files {
		if i >= l.MaxFiles {
			return i
		}
		if l.MaxBytes > 0 && i > 0 && bytes >= l.MaxBytes {
			return i
		}
		bytes += f.Size
	}
	return len(files)
}

// Backlog is what the source holds that no batch has taken.
type Backlog struct {
	Files int64
	Bytes int64
	// OldestAge is the age of the oldest pending file (0 without one).
	OldestAge time.Duration
}

// backlogOf sums pending files.
func backlogOf(files []source.File, now time.Time) Backlog {
	var b Backlog
	for _, f := range files {
		b.Files++
		b.Bytes += f.Size
		if age := now.Sub(f.ModTime); age > b.OldestAge {
			b.OldestAge = age
		}
	}
	return b
}
