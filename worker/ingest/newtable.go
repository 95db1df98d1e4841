package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// create makes the table the first batch writes into: the schema from the source (Parquet exactly,
// JSON and CSV inferred from a sample of the batch), the stream's partition columns, the clustering
// columns, and the lowest protocol those need. A concurrent creator winning is fine: the batch then
// writes into its table.
func (r *runner) create(ctx context.Context, off *state.Offsets, a *attempt) error {
	files := slices.DeleteFunc(slices.Clone(off.Files), func(f source.File) bool {
		return slices.ContainsFunc(a.skipped, func(s state.SkippedFile) bool { return s.Key == f.Key })
	})
	schema, err := format.Infer(ctx, r.src.Store(), files, r.uri, &r.o.Format)
	if err != nil {
		var bad *format.Error
		if errors.As(err, &bad) && r.o.OnBadFile == BadFileSkip && len(files) > 1 {
			a.skipped = append(a.skipped, state.SkippedFile{Key: strings.TrimPrefix(bad.File, r.src.Location()+"/"), Reason: err.Error()})
			return nil
		}
		return result.Refuse(ReasonBadFile, fmt.Errorf("create table %s from batch %d: %w", r.tbl.Location(), off.BatchID, err))
	}
	if r.o.merging() && r.o.Update.DeleteColumn != "" {
		// The delete marker steers the merge; it is not data of the table.
		schema.Fields = slices.DeleteFunc(schema.Fields, func(f *types.StructField) bool { return strings.EqualFold(f.Name, r.o.Update.DeleteColumn) })
	}
	var parts []string
	for _, p := range r.o.PartitionBy {
		f := fieldFold(schema, p)
		if f == nil {
			return result.Refuse(result.ReasonBadArgument, fmt.Errorf("partition column %q is not in the source's columns (%s)", p, names(schema)))
		}
		if _, ok := f.Type.(*types.PrimitiveType); !ok {
			return result.Refuse(result.ReasonBadArgument, fmt.Errorf("partition column %q is a %s; partition columns must be primitive", p, f.Type))
		}
		parts = append(parts, f.Name)
	}
	_, err = r.tbl.Create(ctx, delta.CreateOptions{Schema: schema, PartitionColumns: parts})
	if err != nil && !errors.Is(err, delta.ErrTableExists) {
		return fmt.Errorf("create table %s: %w", r.tbl.Location(), err)
	}
	if err == nil {
		r.o.Logger.Info("Created the table from the stream's first batch", "table", r.tbl.Location(), "columns", names(schema), "partitionBy", parts)
	}
	if len(r.o.ClusterBy) > 0 {
		if _, err := table.ApplyDeclaration(ctx, r.tbl, table.Declaration{ClusterBy: r.o.ClusterBy, SetClusterBy: true}); err != nil {
			return fmt.Errorf("cluster the new table %s by %s: %w", r.tbl.Location(), strings.Join(r.o.ClusterBy, ","), err)
		}
	}
	return nil
}

func fieldFold(st *types.StructType, name string) *types.StructField {
	for _, f := range st.Fields {
		if f.Name == name {
			return f
		}
	}
	for _, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			return f
		}
	}
	return nil
}

func names(st *types.StructType) string {
	out := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		out[i] = f.Name
	}
	return strings.Join(out, ", ")
}
