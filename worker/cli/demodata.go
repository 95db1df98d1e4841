package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newDemoDataCmd) }

func newDemoDataCmd(mode Mode) *cobra.Command {
	var (
		out         outputFlags
		opts        table.DemoOptions
		partitioned bool
	)
	cmd := &cobra.Command{
		Use:   "demo-data <table>",
		Short: "Create (or append to) a demo \"orders\" table made of many small files",
		Long: `demo-data writes a realistic orders table (order_id long, order_ts timestamp, order_date date,
region string, customer_id long, amount decimal(12,2), quantity int, status string, note string)
through deltakeeper's own writer: one blind-append commit per file, so the table has --files small
files — the starting point of the demo, the end-to-end test and the benchmarks. Rows are
deterministic for a --seed; appending continues the order ids.`,
		Example: `  deltakeeper demo-data ./orders --files 50 --rows-per-file 10000
  deltakeeper demo-data s3://lake/orders --files 200 --rows-per-file 5000 --partitioned`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "demo-data", mode, &out, false, func(e *env) (*result.Result, error) {
				opts.Partitioned = partitioned
				return demoData(e, args[0], opts)
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().IntVar(&opts.Files, "files", 10, "number of files (= commits) to append")
	cmd.Flags().IntVar(&opts.RowsPerFile, "rows-per-file", 1000, "rows in each file")
	cmd.Flags().BoolVar(&partitioned, "partitioned", false, "partition a new table by order_date")
	cmd.Flags().Uint64Var(&opts.Seed, "seed", 1, "random seed (the same seed writes the same rows)")
	return cmd
}

func demoData(e *env, location string, opts table.DemoOptions) (*result.Result, error) {
	if opts.Files <= 0 || opts.RowsPerFile <= 0 {
		return nil, badArg("--files and --rows-per-file must be positive")
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	res, err := table.WriteDemoData(e.ctx, tbl, opts, func(done int) {
		e.progress.update("demo-data: %d/%d files", done, opts.Files)
	})
	if err != nil {
		return nil, tableError(err)
	}
	v := int64(res.LastVersion)
	created := "appended to"
	if res.Created {
		created = "created"
	}
	fmt.Fprintf(e.text, "%s %s: %d files, %d rows (order ids %d..%d), %s, versions %d..%d\n", created, location,
		res.Files, res.Rows, res.FirstID, res.EndID-1, humanBytes(res.Bytes), res.FirstVersion, res.LastVersion)
	return &result.Result{Version: &v, Ops: []result.Op{{Name: "append", Outcome: result.Succeeded, Version: &v,
		FilesAdded: int64(res.Files), BytesAdded: res.Bytes}}}, nil
}
