package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newDeleteCmd) }

func newDeleteCmd(mode Mode) *cobra.Command {
	var (
		out    outputFlags
		where  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "delete <table>",
		Short: "Delete the rows matching a predicate (DELETE FROM … WHERE …)",
		Long: `delete removes every live row matching --where in one commit (operation DELETE, as Spark records it).

Files are pruned by their partition values and statistics; only the predicate's columns of the others
are read to find the matching rows. With deletion vectors enabled on the table
(delta.enableDeletionVectors=true and the deletionVectors feature) the rows are marked deleted in a
deletion vector merged with the file's existing one; otherwise each touched file is rewritten without
them (copy-on-write, the other rows kept in their order); a file whose rows all match is removed.
Row ids of the remaining rows are kept on tables with row tracking. A predicate that matches no row
commits nothing (exit code 3). Tables with the change data feed enabled are refused: deltakeeper does
not write change data files.

A concurrent commit that removes a file the delete read (an OPTIMIZE) makes it start again on the new
version, a few times at most; a concurrent commit adding, other than as a blind append, a file the
predicate might match is a conflict (exit code 1: run it again).

The predicate is a conjunction (AND) of comparisons of columns with literals: =, !=, <, <=, >, >=,
IN (…), IS [NOT] NULL; nested fields as a.b.`,
		Example: `  deltakeeper delete ./orders --where "customer_id = 42"
  deltakeeper delete s3://lake/events --where "day < '2024-01-01' AND source IN ('test', 'dev')" --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON {
				out.format = "json"
			}
			return run(cmd, "delete", mode, &out, false, func(e *env) (*result.Result, error) {
				return deleteCommand(e, args[0], where)
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().StringVar(&where, "where", "", `the rows to delete, e.g. "id = 7 AND day >= '2024-06-01'" (required)`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the JSON result (the same as -o json)")
	return cmd
}

func deleteCommand(e *env, location, where string) (*result.Result, error) {
	if strings.TrimSpace(where) == "" {
		return nil, badArg("--where is required: delete deletes the rows matching it (there is no delete-everything form)")
	}
	pred, err := expr.Parse(where)
	if err != nil {
		return nil, tableError(fmt.Errorf("--where: %w", err))
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	snap, err := tbl.Latest(e.ctx)
	if err != nil {
		return nil, tableError(err)
	}
	// Bind here to refuse a predicate naming a column the table lacks before anything is read.
	if _, err := pred.Bind(snap.Schema()); err != nil {
		return nil, tableError(fmt.Errorf("--where: %w", err))
	}
	e.progress.update("delete: finding the rows matching %s", where)
	rep, err := table.DeleteWhere(e.ctx, tbl, pred, table.DeleteWhereOptions{})
	res := &result.Result{}
	if rep != nil {
		res.Delete = deleteResult(where, rep)
		v := int64(rep.Version)
		res.Version = &v
		if err == nil {
			fmt.Fprint(e.text, deleteText(location, where, rep))
			if !rep.Committed {
				res.Outcome = result.NothingToDo
			}
		}
	}
	return res, tableError(err)
}

func deleteResult(where string, r *table.DeleteReport) *result.Delete {
	d := &result.Delete{
		Predicate: where, FilesTotal: r.FilesTotal, FilesPrunedByPartition: r.FilesPrunedByPartition,
		FilesPrunedByStats: r.FilesPrunedByStats, FilesScanned: r.FilesScanned, FilesTouched: r.FilesTouched,
		FilesRewritten: r.FilesRewritten, FilesRemoved: r.FilesRemoved, FilesAdded: r.FilesAdded, DVsWritten: r.DVsWritten,
		RowsDeleted: r.RowsDeleted, RowsCopied: r.RowsCopied, BytesWritten: r.BytesWritten, Version: -1, Attempts: r.Replans + 1,
	}
	if r.Committed {
		d.Version = int64(r.Version)
	}
	return d
}

func deleteText(location, where string, r *table.DeleteReport) string {
	var b strings.Builder
	if !r.Committed {
		fmt.Fprintf(&b, "delete %s where %s: no live row matches at version %d; nothing committed\n", location, where, r.Version)
	} else {
		fmt.Fprintf(&b, "delete %s where %s: deleted %d rows in version %d\n", location, where, r.RowsDeleted, r.Version)
	}
	fmt.Fprintf(&b, "  files: %d in the table, %d skipped by partition values, %d by statistics, %d scanned, %d touched\n",
		r.FilesTotal, r.FilesPrunedByPartition, r.FilesPrunedByStats, r.FilesScanned, r.FilesTouched)
	if r.Committed {
		fmt.Fprintf(&b, "  %d deletion vectors written, %d files rewritten (%d rows copied), %d files removed, %s written\n",
			r.DVsWritten, r.FilesRewritten, r.RowsCopied, r.FilesRemoved, humanBytes(r.BytesWritten))
	}
	if r.Replans > 0 {
		fmt.Fprintf(&b, "  started again %d times after concurrent commits removed files it read\n", r.Replans)
	}
	return b.String()
}
