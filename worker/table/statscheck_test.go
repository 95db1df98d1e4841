package table

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// checkAgainstStats verifies a scan against what the log says about each file: the live row count of
// the table (the corpus's live_rows_from_stats), each file's row count (numRecords minus deleted
// rows), exact null counts where the bounds are tight and no rows are deleted, and every value lying
// within the file's [min, max] bounds.
func checkAgainstStats(ctx context.Context, snap *delta.Snapshot, c conformanceTable) (string, error) {
	scan, err := NewScan(snap, ScanOptions{})
	if err != nil {
		return "", err
	}
	schema := scan.Schema()
	perFile := map[*delta.AddFile][]types.Struct{}
	st, err := scan.Each(ctx, func(f *delta.AddFile, rows []types.Struct) error {
		perFile[f] = append(perFile[f], rows...)
		return nil
	})
	if err != nil {
		return "", err
	}
	if c.LiveRows != nil && st.Rows != *c.LiveRows {
		return "", fmt.Errorf("scan returned %d rows, the statistics say %d live rows", st.Rows, *c.LiveRows)
	}
	checked := 0
	fabricated := map[string]bool{}
	for _, f := range snap.Files() {
		rows := perFile[f]
		fs, ok, err := snap.Stats(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.Path, err)
		}
		if !ok {
			continue
		}
		var deleted int64
		if f.DeletionVector != nil {
			deleted = f.DeletionVector.Cardinality
		}
		if fs.NumRecords != nil && int64(len(rows)) != *fs.NumRecords-deleted {
			return "", fmt.Errorf("%s: read %d rows, stats say %d records - %d deleted", f.Path, len(rows), *fs.NumRecords, deleted)
		}
		for _, cs := range fs.Columns {
			idx, ok := leafIndex(schema, cs.Path)
			if !ok {
				continue
			}
			var nulls int64
			for _, r := range rows {
				v := leafValue(r, idx)
				if v == nil {
					nulls++
					continue
				}
				if err := withinBounds(v, cs); err != nil {
					return "", fmt.Errorf("%s column %v: %w", f.Path, cs.Path, err)
				}
			}
			if cs.NullCount != nil && fs.HasTightBounds() && deleted == 0 && *cs.NullCount != nulls {
				absent, err := columnAbsent(ctx, snap, f, cs.PhysicalPath[0])
				if err != nil {
					return "", err
				}
				if !absent {
					return "", fmt.Errorf("%s column %v: %d nulls read, stats say %d", f.Path, cs.Path, nulls, *cs.NullCount)
				}
				// The file does not store the column at all, so every row reads as null (schema
				// evolution); statistics claiming values were made up for the fixture's skipping tests.
				fabricated[strings.Join(cs.Path, ".")] = true
				continue
			}
			checked++
		}
	}
	note := fmt.Sprintf(" (%d rows; %d column statistics checked", st.Rows, checked)
	if len(fabricated) > 0 {
		note += fmt.Sprintf("; statistics of %v describe a column the data files do not contain (fixture-made), so they read as null", slices.Sorted(maps.Keys(fabricated)))
	}
	return note + ")", nil
}

// columnAbsent reports whether a data file lacks a top-level column (physical name).
func columnAbsent(ctx context.Context, snap *delta.Snapshot, f *delta.AddFile, physical string) (bool, error) {
	r, err := newLocator(snap.Table(), storage.Config{}).open(ctx, f.Path)
	if err != nil {
		return false, err
	}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return false, err
	}
	fs, err := pf.Schema()
	if err != nil {
		return false, err
	}
	return fs.Field(physical) == nil, nil
}

// leafIndex finds a column path through nested structs.
func leafIndex(schema *types.StructType, path []string) ([]int, bool) {
	var idx []int
	st := schema
	for _, name := range path {
		if st == nil {
			return nil, false
		}
		i := st.FieldIndex(name)
		if i < 0 {
			return nil, false
		}
		idx = append(idx, i)
		st, _ = st.Fields[i].Type.(*types.StructType)
	}
	return idx, true
}

func leafValue(r types.Struct, idx []int) types.Value {
	var v types.Value = r
	for _, i := range idx {
		s, ok := v.(types.Struct)
		if !ok {
			return nil
		}
		v = s[i]
	}
	return v
}

func withinBounds(v types.Value, cs delta.ColumnStats) error {
	if f, ok := v.(float64); ok && math.IsNaN(f) {
		return nil
	}
	if f, ok := v.(float32); ok && math.IsNaN(float64(f)) {
		return nil
	}
	if cs.Min != nil {
		if c, err := types.Compare(cs.Min, v); err == nil && c > 0 {
			return fmt.Errorf("value %v below the file's min %v", v, cs.Min)
		}
	}
	if cs.Max != nil {
		if s, ok := cs.Max.(string); ok && utf8.RuneCountInString(s) >= delta.StringPrefixLength {
			return nil // possibly a cut prefix
		}
		if c, err := types.Compare(v, cs.MaxUpperBound()); err == nil && c > 0 {
			return fmt.Errorf("value %v above the file's max %v", v, cs.Max)
		}
	}
	return nil
}
