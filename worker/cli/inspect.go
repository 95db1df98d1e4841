package cli

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newInspectCmd) }

func newInspectCmd(mode Mode) *cobra.Command {
	var (
		out       outputFlags
		props     []string
		clusterBy string
		quality   bool
	)
	cmd := &cobra.Command{
		Use:   "inspect <table>",
		Short: "Show a table's version, protocol, schema, layout and file sizes; optionally apply declared properties and clustering",
		Long: `inspect reports what the log says about a table (no data file is read): version, protocol and
table features, schema, partitioning and clustering, files, bytes, a size histogram and small files.

--set-property and --cluster-by declare the table's configuration: inspect commits the properties
and clustering definition that differ, in one transaction, and reports them under "applied".
A table that already matches gets no commit, so repeated runs are idempotent (this is what the
operator's inspect Jobs run).`,
		Example: `  deltakeeper inspect ./orders
  deltakeeper inspect s3://lake/orders -o json
  deltakeeper inspect s3://lake/events --set-property delta.targetFileSize=128mb --cluster-by customer_id,ts --quality`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "inspect", mode, &out, false, func(e *env) (*result.Result, error) {
				return inspect(e, args[0], props, clusterBy, cmd.Flags().Changed("cluster-by"), quality)
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().StringArrayVar(&props, "set-property", nil, "declare a table property key=value (repeatable); committed only when it differs")
	cmd.Flags().StringVar(&clusterBy, "cluster-by", "", "declare liquid clustering columns a,b (1-4 columns) or none; committed only when it differs")
	cmd.Flags().BoolVar(&quality, "quality", false, "add per-clustering-column quality metrics computed from file statistics")
	return cmd
}

func inspect(e *env, location string, props []string, clusterBy string, clusterSet, quality bool) (*result.Result, error) {
	decl := table.Declaration{Properties: map[string]string{}, SetClusterBy: clusterSet}
	for _, p := range props {
		k, v, ok := strings.Cut(p, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, badArg("--set-property %q: use key=value", p)
		}
		decl.Properties[strings.TrimSpace(k)] = v
	}
	if clusterSet {
		if strings.EqualFold(strings.TrimSpace(clusterBy), "none") {
			decl.ClusterBy = nil
		} else if decl.ClusterBy = splitList(clusterBy); len(decl.ClusterBy) == 0 {
			return nil, badArg("--cluster-by %q: list 1 to %d columns, or none", clusterBy, table.MaxClusteringColumns)
		}
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	res := &result.Result{}
	if len(decl.Properties) > 0 || decl.SetClusterBy {
		applied, err := table.ApplyDeclaration(e.ctx, tbl, decl)
		if err != nil {
			return nil, tableError(err)
		}
		res.Applied = applied
	}
	snap, err := tbl.Latest(e.ctx)
	if err != nil {
		return nil, tableError(err)
	}
	facts, err := table.Inspect(snap)
	if err != nil {
		return nil, tableError(err)
	}
	res.Table = facts.Result()
	v := int64(facts.Version)
	res.Version = &v
	if quality && len(facts.ClusteringColumns) > 0 {
		q, err := table.ClusteringQuality(snap, facts.ClusteringColumns)
		if err != nil {
			return nil, tableError(err)
		}
		res.Table.Quality = q
	}
	fmt.Fprint(e.text, inspectText(snap, facts, res, quality))
	return res, nil
}

func inspectText(snap *delta.Snapshot, f *table.Facts, res *result.Result, quality bool) string {
	var b strings.Builder
	line := func(k, format string, args ...any) { fmt.Fprintf(&b, "%-16s %s\n", k, fmt.Sprintf(format, args...)) }
	orNone := func(s []string) string {
		if len(s) == 0 {
			return "-"
		}
		return strings.Join(s, ", ")
	}
	line("Table", "%s", f.Location)
	line("Version", "%d (committed %s)", f.Version, snap.Timestamp().UTC().Format("2006-01-02 15:04:05 MST"))
	line("Protocol", "reader %d, writer %d", f.Protocol.MinReaderVersion, f.Protocol.MinWriterVersion)
	line("Reader features", "%s", orNone(f.Protocol.ReaderFeatureSet()))
	line("Writer features", "%s", orNone(f.Protocol.WriterFeatureSet()))
	line("Column mapping", "%s", f.ColumnMapping)
	b.WriteString("Schema\n")
	schemaTree(&b, f.Schema, "  ")
	line("Partitioned by", "%s", orNone(f.PartitionColumns))
	if f.ClusteringColumns != nil {
		line("Clustered by", "%s", orNone(f.ClusteringColumns))
	} else {
		line("Clustered by", "-")
	}
	rows := "unknown (files without statistics)"
	if f.RowsKnown {
		rows = fmt.Sprintf("%d", f.Rows)
	}
	line("Files", "%d (%s), rows %s", f.NumFiles, humanBytes(f.Bytes), rows)
	if f.DeletedRows > 0 {
		line("Deleted rows", "%d (hidden by deletion vectors, still stored)", f.DeletedRows)
	}
	line("Small files", "%d below %s (%s)", f.NumSmallFiles, humanBytes(f.SmallFileThreshold), humanBytes(f.SmallBytes))
	if len(f.ClusteringColumns) > 0 {
		line("Unclustered", "%d files (%s)", f.UnclusteredFiles, humanBytes(f.UnclusteredBytes))
	}
	b.WriteString("Size histogram\n")
	for _, h := range f.Histogram {
		if h.Files == 0 {
			continue
		}
		bound := "≥ 1.0 GiB"
		if h.UpTo > 0 {
			bound = "< " + humanBytes(h.UpTo)
		}
		fmt.Fprintf(&b, "  %-12s %8d files %12s\n", bound, h.Files, humanBytes(h.Bytes))
	}
	if len(f.Properties) > 0 {
		b.WriteString("Properties\n")
		for _, k := range slices.Sorted(maps.Keys(f.Properties)) {
			fmt.Fprintf(&b, "  %s = %s\n", k, f.Properties[k])
		}
	}
	if a := res.Applied; a != nil {
		if a.Version == nil {
			b.WriteString("Applied          nothing: the table already matches the declaration\n")
		} else {
			line("Applied", "version %d: properties %s; clustering %s", *a.Version, orNone(a.Properties), orNone(a.ClusteringColumns))
		}
	}
	if quality {
		if len(res.Table.Quality) == 0 {
			b.WriteString("Quality          - (the table is not clustered)\n")
		}
		for _, q := range res.Table.Quality {
			fmt.Fprintf(&b, "Quality %-8s %s: %d/%d files with stats, avg depth %.2f (max %d), overlap %.3f, skipping %.3f, coverage %.1f%%\n",
				q.Column, q.Status, q.NumFilesWithStats, q.NumFiles, q.AvgDepth, q.MaxDepth, q.OverlapRatio, q.SkippingEffectiveness, q.AvgCoveragePct)
		}
	}
	return b.String()
}
