package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/vacuum"
)

func init() { register(newVacuumCmd) }

func newVacuumCmd(mode Mode) *cobra.Command {
	var (
		out       outputFlags
		f         vacuumFlags
		share     string
		atVersion int64
	)
	cmd := &cobra.Command{
		Use:   "vacuum <table>",
		Short: "Delete data files the table no longer references, once older than the retention",
		Long: `vacuum deletes files that the current version of the table does not reference and that are older
than the retention (default: the table's delta.deletedFileRetentionDuration, 7 days). Time travel
to versions older than the retention stops working for the files deleted.

--mode full lists the table's storage and also finds orphans (files of failed writes); lite only
deletes the files of the log's expired remove actions and needs no listing. The log, hidden paths
(names starting with _ or .) other than _change_data, _delta_index and partition directories, and
files younger than the retention are never deleted. Full mode also removes the temp files (and, on S3,
the incomplete multipart uploads) that interrupted deltakeeper writes left in data directories, once
older than the retention; those under _delta_log are checkpoint --log-cleanup's. A retention below the table's is refused unless
--allow-short-retention: readers of older snapshots and writers still committing may need the files.

--share i/N --at-version V vacuums one part of the table: the key space split by the file names of
version V (partition directories balanced over the shares, large ones and an unpartitioned root cut
into key ranges; the log and leftovers are share 0's). N processes, one per share, list and delete
the whole table once between them. A scale-out maintain run does this in every index by itself.`,
		Example: `  deltakeeper vacuum ./orders --dry-run
  deltakeeper vacuum s3://lake/events --retention 72h --allow-short-retention
  deltakeeper vacuum s3://lake/events --mode lite
  deltakeeper vacuum s3://lake/events --retention 168h --share 1/3 --at-version 1200`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "vacuum", mode, &out, false, func(e *env) (*result.Result, error) {
				if share == "" && cmd.Flags().Changed("at-version") {
					return nil, badArg("--at-version belongs to --share; add --share i/N or drop it")
				}
				if share != "" {
					i, n, err := scaleout.ParseShare(share)
					if err != nil {
						return nil, badArg("%v", err)
					}
					if atVersion < 0 {
						return nil, badArg("--share %s: give --at-version, the version every share splits the table by", share)
					}
					f.share = &vacuum.Share{Index: i, Count: n, Version: delta.Version(atVersion)}
				}
				return vacuumCommand(e, args[0], &f)
			})
		},
	}
	out.bind(cmd)
	f.bind(cmd.Flags(), "mode")
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 0, fmt.Sprintf("concurrent deletes (default %d)", vacuum.DefaultParallelism))
	cmd.Flags().StringVar(&share, "share", "", "vacuum only share i of N of the table (i/N), split by the file names of --at-version: N processes, one per share, together vacuum the whole table")
	cmd.Flags().Int64Var(&atVersion, "at-version", -1, "the version whose files split the table into shares; with --share")
	return cmd
}

// vacuumFlags are shared by vacuum and maintain --vacuum (whose mode flag is --vacuum-mode).
type vacuumFlags struct {
	retention   string
	allowShort  bool
	mode        string
	dryRun      bool
	parallelism int
	share       *vacuum.Share // vacuum's own --share (maintain passes its run's share instead)
}

func (f *vacuumFlags) bind(fs *pflag.FlagSet, modeFlag string) {
	fs.StringVar(&f.retention, "retention", "", "keep unreferenced files younger than this (168h, 7d, \"interval 7 days\"; default: delta.deletedFileRetentionDuration)")
	fs.BoolVar(&f.allowShort, "allow-short-retention", false, "permit a retention below the table's delta.deletedFileRetentionDuration")
	fs.StringVar(&f.mode, modeFlag, "full", "full (list storage) or lite (the log's expired removes only)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "report what would be deleted and delete nothing")
}

func (f *vacuumFlags) options() (vacuum.Options, error) {
	o := vacuum.Options{AllowShortRetention: f.allowShort, Mode: vacuum.Mode(strings.ToLower(f.mode)), DryRun: f.dryRun,
		Parallelism: f.parallelism, SampleSize: 20, Share: f.share}
	if o.Mode != vacuum.Full && o.Mode != vacuum.Lite {
		return o, badArg("vacuum mode %q: use full or lite", f.mode)
	}
	if f.retention != "" {
		d, err := parseRetention(f.retention)
		if err != nil {
			return o, badArg("--retention %q: give a duration such as 168h, 7d or \"interval 7 days\"", f.retention)
		}
		o.Retention = &d
	}
	return o, nil
}

// parseRetention accepts Go durations (what the operator passes: 168h0m0s), whole days (7d) and
// Delta's interval strings.
func parseRetention(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil {
			return time.Duration(n) * 24 * time.Hour, nil
		}
	}
	return delta.ParseInterval(s)
}

func vacuumCommand(e *env, location string, f *vacuumFlags) (*result.Result, error) {
	opts, err := f.options()
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	rep, err := vacuum.Run(e.ctx, tbl, opts, func(s string) { e.progress.update("vacuum: %s", s) })
	res := &result.Result{}
	if rep != nil {
		res.Ops = []result.Op{rep.Op}
		if err == nil && rep.Op.Outcome == result.NothingToDo {
			res.Outcome = result.NothingToDo
		}
		fmt.Fprint(e.text, vacuumText(location, rep, opts.DryRun))
	}
	describeTable(e.ctx, tbl, res)
	return res, tableError(err)
}

func vacuumText(location string, r *vacuum.Report, dryRun bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "vacuum %s at version %d (%s mode): retention %s, deleting files %s before %s\n", location, r.Version, r.Mode, r.Retention,
		map[vacuum.Mode]string{vacuum.Full: "last modified", vacuum.Lite: "removed"}[r.Mode], r.Cutoff.UTC().Format(time.RFC3339))
	if s := r.Share; s != nil {
		fmt.Fprintf(&b, "  share %d/%d of the table, split by the files of version %d\n", s.Index, s.Count, s.Version)
	}
	switch {
	case r.FilesToDelete == 0:
		b.WriteString("  nothing to delete\n")
	case dryRun:
		fmt.Fprintf(&b, "  dry run: would delete %d files (%s)\n", r.FilesToDelete, humanBytes(r.BytesToDelete))
		for _, k := range r.Sample {
			fmt.Fprintf(&b, "    %s\n", k)
		}
		if n := r.FilesToDelete - int64(len(r.Sample)); n > 0 {
			fmt.Fprintf(&b, "    … and %d more\n", n)
		}
	default:
		fmt.Fprintf(&b, "  deleted %d of %d files (%s)\n", r.FilesDeleted, r.FilesToDelete, humanBytes(r.BytesDeleted))
	}
	if r.Mode == vacuum.Full {
		fmt.Fprintf(&b, "  %d directories scanned; %d unreferenced files kept because they are younger than the retention\n", r.Directories, r.KeptRecent)
		switch {
		case r.Leftovers > 0 && dryRun:
			fmt.Fprintf(&b, "  dry run: would remove %d temp files and uploads of interrupted writes (%s)\n", r.Leftovers, humanBytes(r.LeftoverBytes))
		case r.Leftovers > 0:
			fmt.Fprintf(&b, "  removed %d of %d temp files and uploads of interrupted writes (%s)\n", r.LeftoversRemoved, r.Leftovers, humanBytes(r.LeftoverBytesRemoved))
		}
		if r.KeptRecentLeftovers > 0 {
			fmt.Fprintf(&b, "  %d temp files and uploads of writes kept because they are younger than the retention\n", r.KeptRecentLeftovers)
		}
	}
	return b.String()
}
