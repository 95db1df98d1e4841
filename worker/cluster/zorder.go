package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ZOrder is Delta's OPTIMIZE … ZORDER BY for tables without liquid clustering: every file of each
// selected partition (where, on partition columns only, may be nil) is rewritten along a Z-order curve
// over the columns' range ids into files of the target size, all partitions in one commit. Like
// Spark's, it rewrites whole partitions every run (Z-order is not incremental; liquid clustering is).
func ZOrder(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot, columns []string, where *expr.Expr, opts Options, progress func(string)) (*result.Op, error) {
	st := newStep("zorder")
	op, finish := st.op, st.finish
	loc := tbl.Location()
	opts, err := prepareRewrite(snap, opts)
	if err != nil {
		return finish(err)
	}
	if cols, clustered, err := snap.ClusteringColumns(); err == nil && clustered && len(cols) > 0 {
		return finish(result.Refuse(result.ReasonBadArgument, fmt.Errorf(
			"table %s uses liquid clustering, which replaces ZORDER BY (Delta rejects it too); run optimize without --zorder-by", loc)))
	}
	keys, err := zorderColumns(snap, columns)
	if err != nil {
		return finish(result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: zorder by %s: %w", loc, strings.Join(columns, ","), err)))
	}
	match, err := partitionFilter(snap, where)
	if err != nil {
		return finish(result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: --where %s: %w", loc, where, err)))
	}
	target, err := targetFileSize(snap, opts)
	if err != nil {
		return finish(result.Refuse(result.ReasonBadArgument, err))
	}
	var order []string
	parts := map[string][]*delta.AddFile{}
	for _, f := range snap.Files() {
		if !match(f) {
			continue
		}
		k, err := snap.PartitionKey(f)
		if err != nil {
			return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
		}
		if _, ok := parts[k]; !ok {
			order = append(order, k)
		}
		parts[k] = append(parts[k], f)
	}
	if len(order) == 0 {
		op.Outcome = result.NothingToDo
		op.Message = "no files to z-order"
		return finish(nil)
	}
	slices.Sort(order)
	var inputs []*delta.AddFile
	var bytes int64
	for _, k := range order {
		for _, f := range parts[k] {
			bytes += f.Size
		}
		inputs = append(inputs, parts[k]...)
	}
	plan := fmt.Sprintf("z-order by %s: %d partition(s), %d files (%d bytes)", strings.Join(columns, ", "), len(order), len(inputs), bytes)
	if opts.DryRun {
		op.Outcome = result.Succeeded
		op.Message = "dry run: would rewrite " + plan
		return finish(nil)
	}
	say(progress, "%s", plan)
	wprogress.Start(ctx, "z-order", int64(len(inputs)), bytes)
	all := &rewritten{}
	for i, k := range order {
		say(progress, "partition %d/%d", i+1, len(order))
		files := parts[k]
		rw, err := rewriteFiles(ctx, snap, keys, files, files[0].PartitionValues, nil, true, opts, target, progress, nil)
		if err != nil {
			if cerr := all.abort(ctx); cerr != nil {
				err = fmt.Errorf("%w (and: %w)", err, cerr)
			}
			return finish(err)
		}
		all.merge(rw)
	}
	by, _ := json.Marshal(columns)
	pred := "[]"
	if where != nil {
		b, _ := json.Marshal([]string{where.String()})
		pred = string(b)
	}
	params := map[string]string{"predicate": pred, "zOrderBy": string(by), "auto": "false"}
	return finish(commitAndReport(ctx, tbl, snap, op, "OPTIMIZE", params, all, plan))
}

// zorderColumns resolves ZORDER BY columns (logical, dotted) to physical paths: 1 to 8 distinct
// non-partition columns of orderable types with statistics (Delta rejects partition columns and, by
// default, columns without statistics, on which Z-order cannot help skipping).
func zorderColumns(snap *delta.Snapshot, columns []string) ([][]string, error) {
	if len(columns) == 0 || len(columns) > 8 {
		return nil, fmt.Errorf("give 1 to 8 columns, got %d", len(columns))
	}
	statsCols, err := snap.StatsColumns()
	if err != nil {
		return nil, err
	}
	var keys [][]string
	for i, c := range columns {
		path := strings.Split(c, ".")
		if slices.ContainsFunc(columns[:i], func(o string) bool { return strings.EqualFold(o, c) }) {
			return nil, fmt.Errorf("column %s is listed twice", c)
		}
		if len(path) == 1 && slices.ContainsFunc(snap.Metadata().PartitionColumns, func(p string) bool { return strings.EqualFold(p, c) }) {
			return nil, fmt.Errorf("%s is a partition column; z-order by data columns (partitions already separate the data)", c)
		}
		f, phys, err := delta.ResolveColumn(snap.Schema(), snap.ColumnMappingMode(), path)
		if err != nil {
			return nil, err
		}
		if _, ok := f.Type.(*types.PrimitiveType); !ok {
			return nil, fmt.Errorf("column %s is %s; z-order needs a primitive column", c, f.Type)
		}
		if !slices.ContainsFunc(statsCols, func(s []string) bool { return slices.EqualFunc(s, path, strings.EqualFold) }) {
			return nil, fmt.Errorf("column %s has no statistics, so z-ordering by it cannot help data skipping; list it in %s first", c, delta.PropStatsColumns)
		}
		keys = append(keys, phys)
	}
	return keys, nil
}

// partitionFilter turns --where into a file filter on partition values (every file when nil).
func partitionFilter(snap *delta.Snapshot, where *expr.Expr) (func(*delta.AddFile) bool, error) {
	if where == nil {
		return func(*delta.AddFile) bool { return true }, nil
	}
	if err := where.PartitionOnly(snap.Metadata().PartitionColumns); err != nil {
		return nil, err
	}
	pred, err := where.Bind(snap.Schema())
	if err != nil {
		return nil, err
	}
	return func(f *delta.AddFile) bool { return pred.MightMatch(partitionFacts{snap: snap, f: f}) }, nil
}

// partitionFacts exposes a file's typed partition values to a partition-only predicate; its values are
// exact, so MightMatch is exact too.
type partitionFacts struct {
	snap *delta.Snapshot
	f    *delta.AddFile
}

func (p partitionFacts) PartitionValue(column string) (types.Value, bool) {
	if !slices.Contains(p.snap.Metadata().PartitionColumns, column) {
		return nil, false
	}
	v, err := p.snap.PartitionValue(p.f, column)
	if err != nil {
		return nil, false
	}
	return v, true
}

func (partitionFacts) ColumnStats([]string) (expr.ColumnStats, bool) {
	return expr.ColumnStats{}, false
}
