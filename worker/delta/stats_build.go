package delta

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// StringPrefixLength is the number of characters (code points) string statistics keep, Spark's
// spark.databricks.io.skipping.stringPrefixLength default and delta-kernel's constant.
const StringPrefixLength = 32

// BuildStats renders the add.stats JSON of a new data file from the Parquet writer's column
// statistics, the way Spark's StatisticsCollection shapes it:
//
//   - numRecords, then minValues/maxValues/nullCount nested by physical column name, for the
//     table's stats columns (StatsColumns) only; tightBounds=true when the table supports DVs;
//   - min/max only for Spark's skipping-eligible types (numbers incl. decimal, date, timestamp,
//     timestamp_ntz, string), null counts for every stats column except arrays and maps (their
//     Parquet leaves count element nulls, not row nulls, so the row null count is unknown);
//   - strings cut to 32 characters: the min is the prefix; the max gets a tie-breaker (0x7F after an
//     ASCII cut point, U+10FFFF otherwise, as delta-kernel does) so it stays ≥ every value under
//     the byte-wise order readers use, and is left out when no safe cut exists within 64
//     characters. Spark appends U+FFFD instead, which is not an upper bound when the cut
//     character is a supplementary one;
//   - timestamps truncated down to milliseconds, min and max alike (Spark's behaviour); readers
//     widen a timestamp max by 999µs (ColumnStats.MaxUpperBound).
//
// A statistic that is missing is simply left out: an unknown bound is always safe.
func (s *Snapshot) BuildStats(numRecords int64, columns []parquetio.ColumnStats) (string, error) {
	cols, err := s.statsColumns()
	if err != nil {
		return "", err
	}
	byPath := make(map[string]*parquetio.ColumnStats, len(columns))
	for i := range columns {
		byPath[strings.Join(columns[i].Path, "\x00")] = &columns[i]
	}
	mins, maxs, nulls := newStatsTree(), newStatsTree(), newStatsTree()
	for _, c := range cols {
		cs, ok := byPath[strings.Join(c.physical, "\x00")]
		if !ok {
			continue
		}
		switch c.typ.(type) {
		case *types.ArrayType, *types.MapType:
			continue
		}
		nulls.set(c.physical, []byte(strconv.FormatInt(cs.NullCount, 10)))
		if !c.minMax || cs.Min == nil || cs.Max == nil {
			continue
		}
		if b, ok := appendStatValue(nil, truncateMin(cs.Min)); ok {
			mins.set(c.physical, b)
		}
		if mx, ok := truncateMax(cs.Max); ok {
			if b, ok := appendStatValue(nil, mx); ok {
				maxs.set(c.physical, b)
			}
		}
	}
	var b []byte
	b = append(b, `{"numRecords":`...)
	b = strconv.AppendInt(b, numRecords, 10)
	for _, part := range []struct {
		name string
		tree *statsTree
	}{{"minValues", mins}, {"maxValues", maxs}, {"nullCount", nulls}} {
		if len(part.tree.keys) == 0 {
			continue
		}
		b = append(b, `,"`+part.name+`":`...)
		b = part.tree.appendJSON(b)
	}
	if s.protocol.HasReaderFeature(FeatureDeletionVectors) || s.protocol.HasWriterFeature(FeatureDeletionVectors) {
		b = append(b, `,"tightBounds":true`...)
	}
	b = append(b, '}')
	if !json.Valid(b) {
		return "", fmt.Errorf("table %s: built invalid statistics JSON %q", s.table.Location(), b)
	}
	return string(b), nil
}

// truncateMin cuts strings to their 32-character prefix and timestamps down to milliseconds.
func truncateMin(v types.Value) types.Value {
	switch x := v.(type) {
	case string:
		i, n := 0, 0
		for i < len(x) && n < StringPrefixLength {
			_, size := utf8.DecodeRuneInString(x[i:])
			i += size
			n++
		}
		return x[:i]
	case types.Timestamp:
		return types.Timestamp(floorMillis(int64(x)))
	case types.TimestampNTZ:
		return types.TimestampNTZ(floorMillis(int64(x)))
	}
	return v
}

// truncateMax returns an upper bound of v that fits the statistics (see BuildStats); ok=false
// when none exists.
func truncateMax(v types.Value) (types.Value, bool) {
	switch x := v.(type) {
	case string:
		return truncateMaxString(x)
	case types.Timestamp:
		return types.Timestamp(floorMillis(int64(x))), true
	case types.TimestampNTZ:
		return types.TimestampNTZ(floorMillis(int64(x))), true
	}
	return v, true
}

func truncateMaxString(s string) (string, bool) {
	offset, chars := 0, 0
	for offset < len(s) && chars < StringPrefixLength {
		_, size := utf8.DecodeRuneInString(s[offset:])
		offset += size
		chars++
	}
	for ; chars <= 2*StringPrefixLength; chars++ {
		if offset >= len(s) {
			return s, true // the whole string fits: no truncation
		}
		r, size := utf8.DecodeRuneInString(s[offset:])
		// Nothing sorts after U+10FFFF, and an invalid byte may sort after any tie-breaker:
		// keep such characters in the prefix and try the next cut point.
		if r == utf8.MaxRune || r == utf8.RuneError && size == 1 {
			offset += size
			continue
		}
		tie := string(rune(0x7F))
		if r >= 0x7F {
			tie = string(utf8.MaxRune)
		}
		return s[:offset] + tie, true
	}
	return "", false
}

func floorMillis(us int64) int64 {
	q := us / 1000
	if us%1000 < 0 {
		q--
	}
	return q * 1000
}

// statsTree is an insertion-ordered nested JSON object of pre-rendered values.
type statsTree struct {
	keys     []string
	values   map[string][]byte
	children map[string]*statsTree
}

func newStatsTree() *statsTree {
	return &statsTree{values: map[string][]byte{}, children: map[string]*statsTree{}}
}

func (t *statsTree) set(path []string, v []byte) {
	cur := t
	for i, name := range path {
		if i == len(path)-1 {
			if _, ok := cur.values[name]; !ok {
				cur.keys = append(cur.keys, name)
			}
			cur.values[name] = v
			return
		}
		child, ok := cur.children[name]
		if !ok {
			child = newStatsTree()
			cur.children[name] = child
			cur.keys = append(cur.keys, name)
		}
		cur = child
	}
}

func (t *statsTree) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, k := range t.keys {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(k)
		b = append(append(b, name...), ':')
		if v, ok := t.values[k]; ok {
			b = append(b, v...)
		} else {
			b = t.children[k].appendJSON(b)
		}
	}
	return append(b, '}')
}
