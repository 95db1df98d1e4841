package delta

import (
	"context"
	"fmt"
	"strconv"
	"unsafe"
)

// LoadOptions choose what a snapshot keeps of each live file. The zero value keeps everything,
// which every command that reads or re-writes statistics needs (clustering, checkpoints, inspect,
// data skipping).
type LoadOptions struct {
	// RowCountsOnly keeps, of each add's statistics, its row count alone: Stats is
	// `{"numRecords":N}` (shared between files with the same count), or "" when the statistics
	// carry none. The statistics string is most of a snapshot's memory (~250 of ~460 bytes per
	// file with four stats columns); bin-packing compaction and vacuum plan without it. Such a
	// snapshot refuses what would lose the rest: Snapshot.Stats, writing a checkpoint, and a
	// commit that adds a file that is already live (its stats would be replaced by the count).
	RowCountsOnly bool
}

// loadConfig is what a load builds: LoadOptions plus the internal metadata-only mode.
type loadConfig struct {
	metadataOnly  bool
	rowCountsOnly bool
}

// LatestWith loads the snapshot of the newest version, keeping what opts say.
func (t *Table) LatestWith(ctx context.Context, opts LoadOptions) (*Snapshot, error) {
	return t.load(ctx, NoVersion, loadConfig{rowCountsOnly: opts.RowCountsOnly})
}

// LoadOptions are the options this snapshot was loaded with: pass them to LatestWith to load a
// newer snapshot of the same kind (after a conflict, for a re-plan).
func (s *Snapshot) LoadOptions() LoadOptions { return LoadOptions{RowCountsOnly: s.rowCountsOnly} }

func (s *Snapshot) errRowCountsOnly(what string) error {
	return fmt.Errorf("table %s: cannot %s: the snapshot of version %d was loaded with row counts only (delta.LoadOptions.RowCountsOnly); load it in full", s.table.Location(), what, s.version)
}

// rowCountStats reduces a statistics string to its row count (see LoadOptions.RowCountsOnly).
func rowCountStats(in *interner, stats string) string {
	return rowCountStatsBytes(in, unsafe.Slice(unsafe.StringData(stats), len(stats)))
}

// rowCountStatsBytes is rowCountStats on the bytes of a decoded column; it keeps no reference to
// them. Equal counts share one string through the interner, so a table whose files hold similar
// row counts pays a pointer per file.
func rowCountStatsBytes(in *interner, stats []byte) string {
	if len(stats) == 0 {
		return ""
	}
	n, ok := NumRecords(unsafe.String(&stats[0], len(stats)))
	if !ok {
		return ""
	}
	var buf [40]byte
	b := strconv.AppendInt(append(buf[:0], `{"numRecords":`...), n, 10)
	return in.bytes(append(b, '}'))
}
