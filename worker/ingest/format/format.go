// Package format reads the source files of an ingest batch — Parquet, newline-delimited or
// multi-line JSON, CSV, optionally gzip- or zstd-compressed — into rows of the table's schema.
//
// Columns are matched to the table's by name, case-insensitively as Spark does; values are converted
// safely (integers widened, strings parsed as dates and timestamps by the configured formats,
// decimals exactly at the column's precision and scale) and anything that cannot be converted is an
// *Error naming the file, the row and the column. Source columns the table lacks are reported as a
// *NewColumnsError, dropped, or rescued into the _rescued_data column, as the stream's schema
// evolution mode says. For new tables, Infer derives a schema from a sample.
package format

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Formats.
const (
	Parquet = "parquet"
	JSON    = "json"
	CSV     = "csv"
)

// Evolution is what happens to source columns the table does not have.
type Evolution string

// Schema evolution modes (Auto Loader's cloudFiles.schemaEvolutionMode).
const (
	// AddNewColumns: the batch reports them (NewColumnsError) and the stream adds them to the table.
	AddNewColumns Evolution = "addNewColumns"
	// Rescue: the schema never changes; unknown fields and unconvertible values go to _rescued_data.
	Rescue Evolution = "rescue"
	// FailOnNewColumns: the batch fails with a NewColumnsError (the default).
	FailOnNewColumns Evolution = "failOnNewColumns"
	// None: new columns are dropped.
	None Evolution = "none"
)

// ParseEvolution accepts the four modes, case-insensitively.
func ParseEvolution(s string) (Evolution, error) {
	for _, e := range []Evolution{AddNewColumns, Rescue, FailOnNewColumns, None} {
		if strings.EqualFold(s, string(e)) {
			return e, nil
		}
	}
	return "", fmt.Errorf("schema evolution %q: use addNewColumns, rescue, failOnNewColumns or none", s)
}

// RescuedColumn is the column rescue mode fills (Auto Loader's name).
const RescuedColumn = "_rescued_data"

// Options are the reader options of one stream.
type Options struct {
	Format string
	// CSV: Header says the first record names the columns (default false, as Spark); without it
	// columns are matched by position (_c0, _c1, … for new tables).
	Header    bool
	Delimiter byte // default ','
	Quote     byte // default '"'
	Escape    byte // default '\\'
	// Comment skips lines starting with it (0: none).
	Comment byte
	// NullValue is the CSV text that means null (default ""): an unquoted empty field is null then.
	NullValue string
	// DateFormat and TimestampFormat are Spark (Java) patterns such as "yyyy-MM-dd HH:mm:ss"; empty
	// means ISO 8601.
	DateFormat, TimestampFormat string
	// MultiLine reads JSON files holding one value (an object, or an array of objects) over many
	// lines instead of one object per line.
	MultiLine bool
	// InferColumnTypes types JSON and CSV columns when creating a table (true); false makes them
	// all strings, as Auto Loader does without cloudFiles.inferColumnTypes.
	InferColumnTypes bool
	// Evolution is the schema evolution mode.
	Evolution Evolution

	dateLayout, tsLayout []string
}

// optionNames are the accepted option keys (lower-case) per format.
var optionNames = map[string][]string{
	CSV:     {"header", "delimiter", "sep", "quote", "escape", "comment", "nullvalue", "dateformat", "timestampformat", "infercolumntypes"},
	JSON:    {"multiline", "dateformat", "timestampformat", "infercolumntypes"},
	Parquet: {},
}

// ParseOptions validates a format and its key=value options (keys case-insensitive, as Spark).
func ParseOptions(format string, kv map[string]string, evolution Evolution) (Options, error) {
	o := Options{Format: strings.ToLower(format), Delimiter: ',', Quote: '"', Escape: '\\', InferColumnTypes: true, Evolution: evolution}
	if o.Evolution == "" {
		o.Evolution = FailOnNewColumns
	}
	allowed, ok := optionNames[o.Format]
	if !ok {
		return o, fmt.Errorf("format %q: use parquet, json or csv", format)
	}
	char := func(k, v string) (byte, error) {
		if v == `\t` {
			return '\t', nil
		}
		if len(v) != 1 {
			return 0, fmt.Errorf("option %s=%q: give one ASCII character", k, v)
		}
		return v[0], nil
	}
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		v := kv[k]
		lk := strings.ToLower(k)
		if !slices.Contains(allowed, lk) {
			return o, fmt.Errorf("option %q is not a %s option; %s options are: %s", k, o.Format, o.Format, strings.Join(allowed, ", "))
		}
		var err error
		switch lk {
		case "header":
			o.Header, err = strconv.ParseBool(v)
		case "multiline":
			o.MultiLine, err = strconv.ParseBool(v)
		case "infercolumntypes":
			o.InferColumnTypes, err = strconv.ParseBool(v)
		case "delimiter", "sep":
			o.Delimiter, err = char(k, v)
		case "quote":
			o.Quote, err = char(k, v)
		case "escape":
			o.Escape, err = char(k, v)
		case "comment":
			o.Comment, err = char(k, v)
		case "nullvalue":
			o.NullValue = v
		case "dateformat":
			o.DateFormat = v
		case "timestampformat":
			o.TimestampFormat = v
		}
		if err != nil {
			return o, fmt.Errorf("option %s=%q: %w", k, v, err)
		}
	}
	if o.Delimiter == o.Quote || o.Delimiter == '\n' || o.Delimiter == '\r' {
		return o, fmt.Errorf("csv delimiter %q must differ from the quote character and from line ends", o.Delimiter)
	}
	// Compile first: in `return o, o.compileLayouts()` the order in which o and the call are evaluated is
	// unspecified, so the layouts might not be in the o returned.
	if err := o.compileLayouts(); err != nil {
		return o, err
	}
	return o, nil
}

// Error is a bad input: which file, and where there is one, which row and column.
type Error struct {
	File   string // URI of the source file
	Row    int64  // 1-based data row (0 when the error is about the whole file)
	Line   int64  // 1-based line the row starts on, for text formats (0 when unknown)
	Column string // dotted column path ("" when not about one column)
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Row > 0 {
		fmt.Fprintf(&b, ", row %d", e.Row)
		if e.Line > 0 && e.Line != e.Row {
			fmt.Fprintf(&b, " (line %d)", e.Line)
		}
	}
	if e.Column != "" {
		fmt.Fprintf(&b, ", column %s", e.Column)
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrBadInput is matched (errors.Is) by every *Error: input that no retry will fix.
var ErrBadInput = errors.New("bad input file")

// Is makes every *Error match ErrBadInput.
func (e *Error) Is(target error) bool { return target == ErrBadInput }

// NewColumnsError reports source columns the table does not have.
type NewColumnsError struct {
	File    string
	Columns []NewColumn
}

// NewColumn is a column found in the source and missing from the table: Path is its logical path
// (a nested field of a struct column has the struct's path first).
type NewColumn struct {
	Path  []string
	Field *types.StructField
}

func (e *NewColumnsError) Error() string {
	names := make([]string, len(e.Columns))
	for i, c := range e.Columns {
		names[i] = strings.Join(c.Path, ".") + " " + c.Field.Type.String()
	}
	return fmt.Sprintf("%s has columns the table does not: %s", e.File, strings.Join(names, ", "))
}
