package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newAlterCmd) }

func newAlterCmd(mode Mode) *cobra.Command {
	var (
		out       outputFlags
		clusterBy string
	)
	cmd := &cobra.Command{
		Use:   "alter <table> --cluster-by a,b|none",
		Short: "Set or remove a table's liquid clustering columns (ALTER TABLE … CLUSTER BY)",
		Long: `alter --cluster-by commits the delta.clustering domain metadata (the physical column paths, as Spark
and delta-kernel-rs write them), enabling the clustering and domainMetadata writer features when the
table lacks them. Spark, Databricks and delta-rs then treat the table as a liquid table.

Clustering takes 1 to 4 columns of an orderable type (numbers, decimal, date, timestamp,
timestamp_ntz, string) that have statistics; a partitioned table cannot be clustered. --cluster-by none
removes clustering. No data is rewritten: the next optimize clusters the table by the new columns,
incrementally (files clustered by the old columns count as unclustered).`,
		Example: `  deltakeeper alter ./events --cluster-by customer_id,ts
  deltakeeper alter s3://lake/events --cluster-by none -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "alter", mode, &out, false, func(e *env) (*result.Result, error) {
				if !cmd.Flags().Changed("cluster-by") {
					return nil, badArg("nothing to alter: pass --cluster-by a,b (or none)")
				}
				return alter(e, args[0], clusterBy)
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().StringVar(&clusterBy, "cluster-by", "", "liquid clustering columns a,b (1-4, dotted for nested fields), or none")
	return cmd
}

func alter(e *env, location, clusterBy string) (*result.Result, error) {
	decl := table.Declaration{SetClusterBy: true}
	if !strings.EqualFold(strings.TrimSpace(clusterBy), "none") {
		if decl.ClusterBy = splitList(clusterBy); len(decl.ClusterBy) == 0 {
			return nil, badArg("--cluster-by %q: list 1 to %d columns, or none", clusterBy, table.MaxClusteringColumns)
		}
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	applied, err := table.ApplyDeclaration(e.ctx, tbl, decl)
	if err != nil {
		return nil, tableError(err)
	}
	res := &result.Result{Applied: applied, Version: applied.Version}
	op := result.Op{Name: "alter", Version: applied.Version, Outcome: result.Succeeded}
	what := "clustering by " + strings.Join(decl.ClusterBy, ", ")
	if len(decl.ClusterBy) == 0 {
		what = "no clustering"
	}
	if applied.Version == nil {
		res.Outcome, op.Outcome = result.NothingToDo, result.NothingToDo
		op.Message = fmt.Sprintf("table already has %s", what)
		fmt.Fprintf(e.text, "%s: already %s; nothing committed\n", location, what)
	} else {
		op.Message = fmt.Sprintf("set %s", what)
		fmt.Fprintf(e.text, "%s: committed version %d: %s (takes effect at the next optimize)\n", location, *applied.Version, what)
	}
	res.Ops = []result.Op{op}
	return res, nil
}
