package delta

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FileStats is add.stats typed by the table schema (PROTOCOL.md §Per-file Statistics).
type FileStats struct {
	// NumRecords is the physical row count (rows deleted by a DV included); nil when absent.
	NumRecords *int64
	// TightBounds=false means min/max are only bounds of the valid rows and null counts are only
	// exact when 0 or numRecords; nil means true.
	TightBounds *bool
	// Columns holds the leaf columns that have at least one statistic, in schema order.
	Columns []ColumnStats
}

// ColumnStats are one leaf column's statistics.
type ColumnStats struct {
	Path         []string // logical path
	PhysicalPath []string // path used in the stats JSON
	Type         types.DataType
	Min, Max     types.Value // nil: unknown
	NullCount    *int64      // nil: unknown
}

// Column returns the statistics of the column at a logical path.
func (s *FileStats) Column(path ...string) (*ColumnStats, bool) {
	for i := range s.Columns {
		if slices.Equal(s.Columns[i].Path, path) {
			return &s.Columns[i], true
		}
	}
	return nil, false
}

// HasTightBounds reports whether min/max/nullCount are exact (tightBounds absent or true).
func (s *FileStats) HasTightBounds() bool { return s.TightBounds == nil || *s.TightBounds }

// MaxUpperBound returns a value that is ≥ every value in the column, given the stored max. For
// timestamps the stored max is truncated to milliseconds (writers truncate, PROTOCOL.md), so the
// true max can be up to 999µs larger; Spark's DataSkippingReader and delta-kernel widen it the
// same way before comparing. Other types are returned unchanged (a truncated string max already
// carries a tie-breaker that makes it an upper bound).
func (c *ColumnStats) MaxUpperBound() types.Value {
	switch m := c.Max.(type) {
	case types.Timestamp:
		return m + types.Timestamp(time.Millisecond/time.Microsecond-1)
	case types.TimestampNTZ:
		return m + types.TimestampNTZ(time.Millisecond/time.Microsecond-1)
	}
	return c.Max
}

// ParseStats decodes an add.stats JSON string against the table schema. Statistics are keyed by
// physical names under column mapping. A value that does not fit its column's type is dropped
// (an unknown bound is safe, a misread one is not); malformed JSON is an error.
func ParseStats(statsJSON string, schema *types.StructType, mode ColumnMappingMode) (*FileStats, error) {
	var top struct {
		NumRecords  *int64          `json:"numRecords"`
		TightBounds *bool           `json:"tightBounds"`
		MinValues   json.RawMessage `json:"minValues"`
		MaxValues   json.RawMessage `json:"maxValues"`
		NullCount   json.RawMessage `json:"nullCount"`
	}
	if err := json.Unmarshal([]byte(statsJSON), &top); err != nil {
		return nil, fmt.Errorf("parse file statistics: %w", err)
	}
	if top.NumRecords != nil && *top.NumRecords < 0 {
		top.NumRecords = nil // no file holds a negative number of rows: the count is unknown
	}
	out := &FileStats{NumRecords: top.NumRecords, TightBounds: top.TightBounds}
	mins, maxs, nulls := decodeObject(top.MinValues), decodeObject(top.MaxValues), decodeObject(top.NullCount)
	walkStats(schema, mode, nil, nil, mins, maxs, nulls, &out.Columns)
	return out, nil
}

func decodeObject(raw json.RawMessage) map[string]json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

func walkStats(st *types.StructType, mode ColumnMappingMode, path, phys []string, mins, maxs, nulls map[string]json.RawMessage, out *[]ColumnStats) {
	for _, f := range st.Fields {
		name := PhysicalName(f, mode)
		lp := append(slices.Clip(path), f.Name)
		pp := append(slices.Clip(phys), name)
		if sub, ok := f.Type.(*types.StructType); ok {
			walkStats(sub, mode, lp, pp, decodeObject(mins[name]), decodeObject(maxs[name]), decodeObject(nulls[name]), out)
			continue
		}
		c := ColumnStats{Path: lp, PhysicalPath: pp, Type: f.Type}
		if raw, ok := nulls[name]; ok {
			var n int64
			if json.Unmarshal(raw, &n) == nil {
				c.NullCount = &n
			}
		}
		if v, err := parseStatValue(f.Type, mins[name]); err == nil {
			c.Min = v
		}
		if v, err := parseStatValue(f.Type, maxs[name]); err == nil {
			c.Max = v
		}
		if c.Min != nil || c.Max != nil || c.NullCount != nil {
			*out = append(*out, c)
		}
	}
}

// NumRecords extracts only numRecords from a stats string without typing the columns; ok=false
// when the stats are absent, malformed or carry no count, or an impossible (negative) one: then
// callers count rows from the Parquet footer, as for a file written without statistics.
func NumRecords(statsJSON string) (int64, bool) {
	if statsJSON == "" {
		return 0, false
	}
	if n, ok := leadingNumRecords(statsJSON); ok {
		if n < 0 {
			return 0, false
		}
		return n, true
	}
	var top struct {
		NumRecords *int64 `json:"numRecords"`
	}
	if json.Unmarshal([]byte(statsJSON), &top) != nil || top.NumRecords == nil || *top.NumRecords < 0 {
		return 0, false
	}
	return *top.NumRecords, true
}

// WithNumRecords returns a copy of a whose statistics record numRecords = n, for a file whose add
// carries no row count: n is what the caller read from the file's Parquet footer (its physical rows,
// deletion vector included). Other statistics are kept. Rewrites remove such files with the copy, so
// the remove action records the count and the commit's row check (validateRewrite) can use it.
func (a *AddFile) WithNumRecords(n int64) *AddFile {
	c := *a
	var fields map[string]json.RawMessage
	if a.Stats != "" && json.Unmarshal([]byte(a.Stats), &fields) != nil {
		fields = nil // unreadable statistics: the count is all we know
	}
	// numRecords first, as every writer puts it, so that NumRecords takes its fast path.
	b := []byte(`{"numRecords":` + strconv.FormatInt(n, 10))
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k == "numRecords" {
			continue
		}
		name, _ := json.Marshal(k)
		b = append(append(append(append(b, ','), name...), ':'), fields[k]...)
	}
	c.Stats = string(append(b, '}'))
	return &c
}

// leadingNumRecords reads numRecords without a JSON decoder when the stats start with it, as every
// writer we know puts it: `{"numRecords":123,` (or `}`). Counting a million files' rows (inspect,
// commit validation) then costs microseconds, not seconds. Anything else, including whitespace or a
// value that is not a plain non-negative integer, is left to the decoder (ok=false).
func leadingNumRecords(s string) (int64, bool) {
	const prefix = `{"numRecords":`
	if len(s) <= len(prefix) || s[:len(prefix)] != prefix {
		return 0, false
	}
	var n int64
	i := len(prefix)
	start := i
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		if i-start >= 18 { // beyond what int64 surely holds: let the decoder judge
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	if i == start || i == len(s) || (s[i] != ',' && s[i] != '}') || (s[start] == '0' && i-start > 1) {
		return 0, false
	}
	return n, true
}
