package delta

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/bytesize"
)

// Table property keys deltakeeper reads (PROTOCOL.md §Table Properties, Spark DeltaConfig.scala).
const (
	PropCheckpointInterval          = "delta.checkpointInterval"
	PropTargetFileSize              = "delta.targetFileSize"
	PropLogRetentionDuration        = "delta.logRetentionDuration"
	PropDeletedFileRetention        = "delta.deletedFileRetentionDuration"
	PropCheckpointRetentionDuration = "delta.checkpointRetentionDuration"
	PropEnableExpiredLogCleanup     = "delta.enableExpiredLogCleanup"
	PropColumnMappingMode           = "delta.columnMapping.mode"
	PropColumnMappingMaxID          = "delta.columnMapping.maxColumnId"
	PropNumIndexedCols              = "delta.dataSkippingNumIndexedCols"
	PropStatsColumns                = "delta.dataSkippingStatsColumns"
	PropCompressionCodec            = "delta.parquet.compression.codec"
	PropEnableICT                   = "delta.enableInCommitTimestamps"
	PropICTEnablementVersion        = "delta.inCommitTimestampEnablementVersion"
	PropICTEnablementTimestamp      = "delta.inCommitTimestampEnablementTimestamp"
	PropWriteStatsAsJSON            = "delta.checkpoint.writeStatsAsJson"
	PropWriteStatsAsStruct          = "delta.checkpoint.writeStatsAsStruct"
	PropCheckpointPolicy            = "delta.checkpointPolicy"
	PropAppendOnly                  = "delta.appendOnly"
	PropEnableCDF                   = "delta.enableChangeDataFeed"
	PropEnableDeletionVectors       = "delta.enableDeletionVectors"
	PropEnableRowTracking           = "delta.enableRowTracking"
	PropRowTrackingSuspended        = "delta.rowTrackingSuspended"
	PropMaterializedRowIDColumn     = "delta.rowTracking.materializedRowIdColumnName"
	PropMaterializedRowCommitVer    = "delta.rowTracking.materializedRowCommitVersionColumnName"
	PropIsolationLevel              = "delta.isolationLevel"
	PropCheckpointProtectionVersion = "delta.requireCheckpointProtectionBeforeVersion"
	PropEnableVariantShredding      = "delta.enableVariantShredding"
)

// Defaults, as Spark's DeltaConfig.scala has them.
const (
	DefaultCheckpointInterval = 10
	DefaultNumIndexedCols     = 32
	DefaultCompressionCodec   = "zstd" // PROTOCOL.md: writers SHOULD default to zstd
	DefaultTargetFileSize     = 100 << 20
)

// Default retention durations (DeltaConfig.scala).
var (
	DefaultLogRetention         = 30 * 24 * time.Hour
	DefaultDeletedFileRetention = 7 * 24 * time.Hour
	DefaultCheckpointRetention  = 2 * 24 * time.Hour
)

// ColumnMappingMode is delta.columnMapping.mode.
type ColumnMappingMode string

// Column mapping modes.
const (
	ColumnMappingNone ColumnMappingMode = "none"
	ColumnMappingName ColumnMappingMode = "name"
	ColumnMappingID   ColumnMappingMode = "id"
)

// TableProperties is metaData.configuration with typed accessors. Malformed values are errors,
// never silently replaced by defaults: a wrong retention could delete files a reader still needs.
type TableProperties map[string]string

func (p TableProperties) lookup(key string) (string, bool) {
	v, ok := p[key]
	return strings.TrimSpace(v), ok && strings.TrimSpace(v) != ""
}

// Bool reads a boolean property ("true"/"false", any case).
func (p TableProperties) Bool(key string, def bool) (bool, error) {
	v, ok := p.lookup(key)
	if !ok {
		return def, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return def, fmt.Errorf("table property %s=%q is not a boolean", key, v)
}

// flag is Bool for feature switches whose malformed value is treated as "not enabled" (the way
// Spark's isEnabled checks behave for feature-activation properties).
func (p TableProperties) flag(key string) bool {
	b, err := p.Bool(key, false)
	return err == nil && b
}

// Int reads an integer property.
func (p TableProperties) Int(key string, def int64) (int64, error) {
	v, ok := p.lookup(key)
	if !ok {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return def, fmt.Errorf("table property %s=%q is not an integer", key, v)
	}
	return n, nil
}

// CheckpointInterval is delta.checkpointInterval (default 10, must be positive).
func (p TableProperties) CheckpointInterval() (int64, error) {
	n, err := p.Int(PropCheckpointInterval, DefaultCheckpointInterval)
	if err == nil && n <= 0 {
		return DefaultCheckpointInterval, fmt.Errorf("table property %s=%d must be positive", PropCheckpointInterval, n)
	}
	return n, err
}

// TargetFileSize is delta.targetFileSize in bytes; ok=false when unset.
func (p TableProperties) TargetFileSize() (size int64, ok bool, err error) {
	v, set := p.lookup(PropTargetFileSize)
	if !set {
		return 0, false, nil
	}
	n, err := ParseByteSize(v)
	if err != nil {
		return 0, false, fmt.Errorf("table property %s=%q: %w", PropTargetFileSize, v, err)
	}
	return n, true, nil
}

// LogRetention is delta.logRetentionDuration (default 30 days).
func (p TableProperties) LogRetention() (time.Duration, error) {
	return p.duration(PropLogRetentionDuration, DefaultLogRetention)
}

// DeletedFileRetention is delta.deletedFileRetentionDuration (default 7 days), VACUUM's horizon.
func (p TableProperties) DeletedFileRetention() (time.Duration, error) {
	return p.duration(PropDeletedFileRetention, DefaultDeletedFileRetention)
}

// CheckpointRetention is delta.checkpointRetentionDuration (default 2 days).
func (p TableProperties) CheckpointRetention() (time.Duration, error) {
	return p.duration(PropCheckpointRetentionDuration, DefaultCheckpointRetention)
}

func (p TableProperties) duration(key string, def time.Duration) (time.Duration, error) {
	v, ok := p.lookup(key)
	if !ok {
		return def, nil
	}
	d, err := ParseInterval(v)
	if err != nil {
		return def, fmt.Errorf("table property %s=%q: %w", key, v, err)
	}
	return d, nil
}

// ColumnMappingMode is delta.columnMapping.mode; unknown modes are an error.
func (p TableProperties) ColumnMappingMode() (ColumnMappingMode, error) {
	v, ok := p.lookup(PropColumnMappingMode)
	if !ok {
		return ColumnMappingNone, nil
	}
	switch m := ColumnMappingMode(strings.ToLower(v)); m {
	case ColumnMappingNone, ColumnMappingName, ColumnMappingID:
		return m, nil
	}
	return ColumnMappingNone, fmt.Errorf("table property %s=%q is not a known column mapping mode (none, name, id)", PropColumnMappingMode, v)
}

// NumIndexedCols is delta.dataSkippingNumIndexedCols (default 32; -1 means all columns).
func (p TableProperties) NumIndexedCols() (int, error) {
	n, err := p.Int(PropNumIndexedCols, DefaultNumIndexedCols)
	if err == nil && n < -1 {
		return DefaultNumIndexedCols, fmt.Errorf("table property %s=%d must be -1 or more", PropNumIndexedCols, n)
	}
	return int(n), err
}

// StatsColumns is delta.dataSkippingStatsColumns split into column paths (ok=false when unset).
// Names are logical; a path "a.b" is a nested field and backquotes quote a name with dots.
func (p TableProperties) StatsColumns() (cols [][]string, ok bool, err error) {
	v, set := p[PropStatsColumns]
	if !set {
		return nil, false, nil
	}
	cols, err = parseColumnList(v)
	if err != nil {
		return nil, false, fmt.Errorf("table property %s=%q: %w", PropStatsColumns, v, err)
	}
	return cols, true, nil
}

// CompressionCodec is delta.parquet.compression.codec, lower-cased (default zstd).
func (p TableProperties) CompressionCodec() string {
	if v, ok := p.lookup(PropCompressionCodec); ok {
		return strings.ToLower(v)
	}
	return DefaultCompressionCodec
}

// InCommitTimestampsEnabled reports delta.enableInCommitTimestamps.
func (p TableProperties) InCommitTimestampsEnabled() bool { return p.flag(PropEnableICT) }

// ICTEnablement returns the version from which in-commit timestamps are in force (ok=false when
// ICT was on from the table's creation, or when it is off).
func (p TableProperties) ICTEnablement() (v Version, ts int64, ok bool, err error) {
	if !p.InCommitTimestampsEnabled() {
		return NoVersion, 0, false, nil
	}
	ver, err := p.Int(PropICTEnablementVersion, -1)
	if err != nil || ver < 0 {
		return NoVersion, 0, false, err
	}
	t, err := p.Int(PropICTEnablementTimestamp, 0)
	return Version(ver), t, true, err
}

// WriteStatsAsJSON is delta.checkpoint.writeStatsAsJson (default true).
func (p TableProperties) WriteStatsAsJSON() (bool, error) { return p.Bool(PropWriteStatsAsJSON, true) }

// WriteStatsAsStruct is delta.checkpoint.writeStatsAsStruct. PROTOCOL.md documents false as the
// default (Spark's code defaults to true); we follow the protocol, and CheckpointOptions still
// writes struct stats whenever JSON stats are switched off so that stats are never dropped.
func (p TableProperties) WriteStatsAsStruct() (bool, error) {
	return p.Bool(PropWriteStatsAsStruct, false)
}

// IsolationLevel is delta.isolationLevel: "Serializable" or "WriteSerializable" (default).
func (p TableProperties) IsolationLevel() string {
	if v, ok := p.lookup(PropIsolationLevel); ok && strings.EqualFold(v, "Serializable") {
		return "Serializable"
	}
	return "WriteSerializable"
}

// ParseInterval parses Spark's calendar-interval strings as used by retention properties:
// "interval 7 days", "interval 1 week", "30 days", "interval 1 day 12 hours". Months and years
// are rejected, as Delta does: their length in time is not fixed.
func ParseInterval(s string) (time.Duration, error) {
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	if len(f) > 0 && f[0] == "interval" {
		f = f[1:]
	}
	if len(f) == 0 || len(f)%2 != 0 {
		return 0, fmt.Errorf("not an interval of the form \"interval <n> <unit> …\"")
	}
	var total time.Duration
	for i := 0; i < len(f); i += 2 {
		n, err := strconv.ParseInt(strings.Trim(f[i], "'"), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("interval amount %q is not an integer", f[i])
		}
		unit, ok := intervalUnits[strings.TrimSuffix(f[i+1], "s")]
		if !ok {
			return 0, fmt.Errorf("interval unit %q is not supported (use weeks, days, hours, minutes, seconds)", f[i+1])
		}
		total += time.Duration(n) * unit
	}
	if total < 0 {
		return 0, fmt.Errorf("interval must not be negative")
	}
	return total, nil
}

var intervalUnits = map[string]time.Duration{
	"week": 7 * 24 * time.Hour, "day": 24 * time.Hour, "hour": time.Hour, "minute": time.Minute,
	"second": time.Second, "millisecond": time.Millisecond, "microsecond": time.Microsecond,
}

// ParseByteSize parses a size-valued table property as Spark's byteStringAsBytes does: a whole number with
// an optional binary unit (b, k/kb, m/mb, g/gb, t/tb, p/pb); a bare number is bytes. The grammar is
// bytesize.ParseSpark's, stricter than the command line's, because other engines read the same property.
func ParseByteSize(s string) (int64, error) {
	return bytesize.ParseSpark(s)
}

// parseColumnList splits "a, b.c, `x.y`.z" into paths.
func parseColumnList(s string) ([][]string, error) {
	var cols [][]string
	var path []string
	var cur strings.Builder
	inQuote, quoted := false, false
	flush := func(end bool) error {
		name := cur.String()
		if !quoted {
			name = strings.TrimSpace(name)
		}
		if name == "" && !quoted {
			if end && len(path) == 0 {
				return nil
			}
			return fmt.Errorf("empty column name")
		}
		path = append(path, name)
		cur.Reset()
		quoted = false
		if end {
			cols = append(cols, path)
			path = nil
		}
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inQuote && c == '`' && i+1 < len(s) && s[i+1] == '`':
			cur.WriteByte('`')
			i++
		case c == '`':
			inQuote = !inQuote
			quoted = true
		case inQuote:
			cur.WriteByte(c)
		case c == '.':
			if err := flush(false); err != nil {
				return nil, err
			}
		case c == ',':
			if err := flush(true); err != nil {
				return nil, err
			}
		default:
			if !(quoted && (c == ' ' || c == '\t')) {
				cur.WriteByte(c)
			}
		}
	}
	if inQuote {
		return nil, fmt.Errorf("unterminated backquote")
	}
	if err := flush(true); err != nil {
		return nil, err
	}
	return cols, nil
}
