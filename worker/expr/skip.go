package expr

import (
	"math"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// StringPrefixLength is the number of characters writers keep in string statistics (Spark's and
// delta-kernel's default). A max of at least this many characters may have been cut.
const StringPrefixLength = 32

// ColumnStats are what a file's statistics say about one leaf column. Nil bounds and counts are
// unknown.
type ColumnStats struct {
	Min, Max   types.Value
	NullCount  *int64
	NumRecords *int64
}

// FileFacts is what MightMatch may know about a data file.
type FileFacts interface {
	// PartitionValue returns the typed value of a top-level partition column (logical name);
	// ok=false when the column is not a partition column.
	PartitionValue(column string) (v types.Value, ok bool)
	// ColumnStats returns the statistics of a column at a logical path; ok=false when none are known.
	ColumnStats(path []string) (ColumnStats, bool)
}

// MightMatch reports whether a file may hold a row satisfying the predicate. It is conservative:
// false only when partition values or statistics prove that no row matches. Statistics are treated
// as bounds, never as exact values: a timestamp max is truncated to milliseconds (widened here by
// 999µs), a string max of StringPrefixLength characters or more may be a cut prefix (treated as
// unbounded above), a float max cannot be trusted to account for NaN (which orders above everything),
// and a missing statistic proves nothing.
func (p *Predicate) MightMatch(f FileFacts) bool {
	for i := range p.terms {
		if !p.terms[i].mightMatch(f) {
			return false
		}
	}
	return true
}

func (t *term) mightMatch(f FileFacts) bool {
	if len(t.Column) == 1 {
		if v, ok := f.PartitionValue(t.Column[0]); ok {
			return t.test(v)
		}
	}
	s, ok := f.ColumnStats(t.Column)
	if !ok {
		return true
	}
	allNull := s.NullCount != nil && s.NumRecords != nil && *s.NullCount == *s.NumRecords
	switch t.Op {
	case IsNull:
		return s.NullCount == nil || *s.NullCount > 0
	case IsNotNull:
		return !allNull
	}
	if allNull {
		return false // every row is null: no comparison can be true
	}
	lo, hi := t.lowerBound(s.Min), t.upperBound(s.Max)
	may := func(op Op, lit types.Value) bool {
		cLo, okLo := compare(lo, lit) // lo ≤ every value
		cHi, okHi := compare(hi, lit) // hi ≥ every value
		switch op {
		case Eq, In:
			return !(okLo && cLo > 0) && !(okHi && cHi < 0)
		case Ne:
			return !(okLo && okHi && cLo == 0 && cHi == 0)
		case Lt:
			return !(okLo && cLo >= 0)
		case Le:
			return !(okLo && cLo > 0)
		case Gt:
			return !(okHi && cHi <= 0)
		case Ge:
			return !(okHi && cHi < 0)
		}
		return true
	}
	for _, lit := range t.lits {
		if lit == nil {
			continue
		}
		if may(t.Op, lit) {
			return true
		}
	}
	return false
}

// lowerBound returns a value ≤ every non-null value of the column given the stored min, or nil.
func (t *term) lowerBound(min types.Value) types.Value {
	switch m := min.(type) {
	case float32:
		if math.IsNaN(float64(m)) {
			return nil
		}
	case float64:
		if math.IsNaN(m) {
			return nil
		}
	}
	return min
}

// upperBound returns a value ≥ every non-null value of the column given the stored max, or nil.
func (t *term) upperBound(max types.Value) types.Value {
	switch m := max.(type) {
	case types.Timestamp:
		return m + 999
	case types.TimestampNTZ:
		return m + 999
	case string:
		if utf8.RuneCountInString(m) >= StringPrefixLength {
			return nil
		}
	case float32, float64:
		return nil
	}
	return max
}
