package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newQualityCmd) }

func newQualityCmd(mode Mode) *cobra.Command {
	var (
		out     outputFlags
		columns string
	)
	cmd := &cobra.Command{
		Use:   "quality <table>",
		Short: "Report how well the file layout supports data skipping, per clustering column",
		Long: `quality computes, from the live files' statistics alone (no data file is read), per clustering column
(or per --columns column on any table): files with statistics, average and maximum depth (files whose
[min, max] contains a point), average coverage of the column's range, overlap ratio and skipping
effectiveness (the share of non-matching files a point query skips), plus the skipping measured on up to
100 point queries on real values. docs/clustering-quality.md defines every metric; for k files on d
columns a perfect grid gives skipping effectiveness (k − k^(1−1/d)) ÷ (k − 1).`,
		Example: `  deltakeeper quality ./events
  deltakeeper quality s3://lake/events --columns customer_id,ts -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "quality", mode, &out, false, func(e *env) (*result.Result, error) {
				return quality(e, args[0], splitList(columns))
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().StringVar(&columns, "columns", "", "columns a,b to analyse (default: the clustering columns)")
	return cmd
}

func quality(e *env, location string, columns []string) (*result.Result, error) {
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	snap, err := tbl.Latest(e.ctx)
	if err != nil {
		return nil, tableError(err)
	}
	facts, err := table.Inspect(snap)
	if err != nil {
		return nil, tableError(err)
	}
	if len(columns) == 0 {
		if len(facts.ClusteringColumns) == 0 {
			return nil, badArg("table %s is not clustered: pass --columns a,b to analyse other columns", location)
		}
		columns = facts.ClusteringColumns
	}
	for _, c := range columns {
		if _, _, err := delta.ResolveColumn(snap.Schema(), snap.ColumnMappingMode(), strings.Split(c, ".")); err != nil {
			return nil, badArg("--columns %s: %v", c, err)
		}
	}
	q, err := table.ClusteringQuality(snap, columns)
	if err != nil {
		return nil, tableError(err)
	}
	res := &result.Result{Table: facts.Result()}
	res.Table.Quality = q
	v := int64(facts.Version)
	res.Version = &v
	fmt.Fprint(e.text, qualityText(facts, q))
	return res, nil
}

func qualityText(f *table.Facts, q []result.ColumnQuality) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Table %s, version %d, %d files\n", f.Location, f.Version, f.NumFiles)
	if len(f.ClusteringColumns) > 0 {
		fmt.Fprintf(&b, "Clustered by %s; %d files (%s) not clustered by them\n", strings.Join(f.ClusteringColumns, ", "), f.UnclusteredFiles, humanBytes(f.UnclusteredBytes))
	}
	fmt.Fprintf(&b, "%-20s %-8s %10s %10s %10s %10s %10s %10s %10s\n", "column", "status", "withStats", "avgDepth", "maxDepth", "cover%", "overlap", "skipping", "measured")
	for _, c := range q {
		fmt.Fprintf(&b, "%-20s %-8s %10d %10.2f %10d %10.2f %10.3f %10.3f %10.3f\n", c.Column, c.Status, c.NumFilesWithStats,
			c.AvgDepth, c.MaxDepth, c.AvgCoveragePct, c.OverlapRatio, c.SkippingEffectiveness, c.MeasuredSkipping)
	}
	return b.String()
}
