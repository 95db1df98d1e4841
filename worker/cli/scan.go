package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func init() { register(newScanCmd) }

type scanFlags struct {
	version   int64
	timestamp string
	columns   string
	where     string
	format    string
	outFile   string
}

func newScanCmd(mode Mode) *cobra.Command {
	var (
		out outputFlags
		f   scanFlags
	)
	cmd := &cobra.Command{
		Use:   "scan <table>",
		Short: "Print a table's rows (deletion vectors applied, partition values and column mapping resolved)",
		Long: `scan reads the live rows of a table version and writes them as JSON lines, CSV or Parquet to
stdout or --out. With rows on stdout, the result report goes to stderr.

--where filters rows with a small predicate language and skips files whose partition values or
statistics rule them out: col = | != | <> | < | <= | > | >= literal, col IN (…), col IS [NOT] NULL,
AND and parentheses; literals 'strings', numbers, true, false, NULL; dates 'YYYY-MM-DD' and
timestamps 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±hh:mm]' (UTC without a zone).

JSON values are canonical: integers as numbers, decimals as exact strings ("12.50"), timestamps
RFC 3339 UTC with microseconds, timestamp_ntz without zone, binary as base64, structs as objects,
arrays as arrays, maps as objects when keys are strings (else arrays of {"key","value"}), NaN and
infinities as the strings "NaN", "Infinity", "-Infinity".`,
		Example: `  deltakeeper scan ./orders --where "region = 'eu-west' AND amount > 100" --columns order_id,amount
  deltakeeper scan s3://lake/orders --version 12 --format parquet --out orders-v12.parquet
  deltakeeper scan ./orders --timestamp 2024-06-01T00:00:00Z --format csv`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dataOnStdout := f.outFile == "" || f.outFile == "-"
			return run(cmd, "scan", mode, &out, dataOnStdout, func(e *env) (*result.Result, error) {
				return scanTable(e, cmd, args[0], &f)
			})
		},
	}
	out.bind(cmd)
	fl := cmd.Flags()
	fl.Int64Var(&f.version, "version", -1, "read this table version (time travel)")
	fl.StringVar(&f.timestamp, "timestamp", "", "read the version current at this time (RFC 3339, or YYYY-MM-DD[ HH:MM:SS] in UTC)")
	fl.StringVar(&f.columns, "columns", "", "comma-separated columns to output, in this order (default: all)")
	fl.StringVar(&f.where, "where", "", "row filter, e.g. \"region = 'eu' AND ts >= '2024-01-01'\"")
	fl.StringVar(&f.format, "format", "jsonl", "row format: jsonl, csv or parquet")
	fl.StringVar(&f.outFile, "out", "", "write rows to this file instead of stdout")
	return cmd
}

func scanTable(e *env, cmd *cobra.Command, location string, f *scanFlags) (*result.Result, error) {
	if f.version >= 0 && f.timestamp != "" {
		return nil, badArg("--version and --timestamp are exclusive")
	}
	var where *expr.Expr
	if f.where != "" {
		var err error
		if where, err = expr.Parse(f.where); err != nil {
			return nil, tableError(err)
		}
	}
	var at time.Time
	if f.timestamp != "" {
		var err error
		if at, err = parseTime(f.timestamp); err != nil {
			return nil, badArg("--timestamp %q: use RFC 3339 (2024-06-01T12:00:00Z) or YYYY-MM-DD[ HH:MM:SS] (UTC)", f.timestamp)
		}
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	var snap *delta.Snapshot
	switch {
	case f.version >= 0:
		snap, err = tbl.At(e.ctx, delta.Version(f.version))
	case f.timestamp != "":
		snap, err = tbl.AtTime(e.ctx, at)
	default:
		snap, err = tbl.Latest(e.ctx)
	}
	if err != nil {
		return nil, tableError(err)
	}
	opts := table.ScanOptions{Where: where, Storage: storage.ConfigFromEnv()}
	if f.columns != "" {
		opts.Columns = splitList(f.columns)
	}
	scan, err := table.NewScan(snap, opts)
	if err != nil {
		if errors.Is(err, delta.ErrUnsupportedTable) {
			return nil, tableError(err)
		}
		return nil, tableError(result.Refuse(result.ReasonBadArgument, err))
	}
	w := cmd.OutOrStdout()
	var file *os.File
	if f.outFile != "" && f.outFile != "-" {
		if file, err = os.Create(f.outFile); err != nil {
			return nil, badArg("--out: %v", err)
		}
		defer file.Close()
		w = file
	}
	sink, err := newRowSink(f.format, w, scan.Schema())
	if err != nil {
		return nil, err
	}
	total := len(scan.Files())
	var done int64
	st, err := scan.Run(e.ctx, func(rows []types.Struct) error {
		done += int64(len(rows))
		e.progress.update("scan: %d rows", done)
		return sink.write(rows)
	})
	if err != nil {
		return nil, tableError(err)
	}
	if err := sink.close(); err != nil {
		return nil, result.Fail(result.ReasonInternal, fmt.Errorf("write rows: %w", err))
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return nil, result.Fail(result.ReasonInternal, fmt.Errorf("write %s: %w", f.outFile, err))
		}
	}
	v := int64(snap.Version())
	msg := fmt.Sprintf("%d rows from %d of %d files (%d skipped by --where), %s read", st.Rows, st.FilesRead,
		total+st.FilesSkipped, st.FilesSkipped, humanBytes(st.BytesRead))
	fmt.Fprintf(e.text, "scan %s at version %d: %s\n", location, v, msg)
	return &result.Result{Version: &v, Message: msg}, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not a time")
}
