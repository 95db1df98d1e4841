package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The worker command lines, the contract with `deltakeeper worker`. Each builder returns the arguments
// after `worker`; BuildJob appends the output flags.

// inspectArgs is `inspect <loc> [--set-property k=v]... [--cluster-by a,b] --quality`: the worker reads the
// table, commits the declared properties and clustering columns where they differ, and reports facts and
// per-column quality.
func inspectArgs(table *deltav1.DeltaTable) ([]string, error) {
	args := []string{"inspect", table.Spec.Location}
	props, err := declaredProperties(table.Spec.Properties)
	if err != nil {
		return nil, err
	}
	for _, kv := range props {
		args = append(args, "--set-property", kv)
	}
	if len(table.Spec.ClusterBy) > 0 {
		if err := checkColumnList("spec.clusterBy", table.Spec.ClusterBy); err != nil {
			return nil, err
		}
		args = append(args, "--cluster-by", strings.Join(table.Spec.ClusterBy, ","))
	}
	return append(args, "--quality"), nil
}

// declaredProperties maps the typed properties to their Delta keys, in a fixed order, then the extra ones
// sorted by key, as key=value.
func declaredProperties(p *deltav1.TableProperties) ([]string, error) {
	if p == nil {
		return nil, nil
	}
	var out []string
	add := func(key, value string) { out = append(out, key+"="+value) }
	if p.OptimizeWrite != nil {
		add("delta.autoOptimize.optimizeWrite", strconv.FormatBool(*p.OptimizeWrite))
	}
	if p.AutoCompact != nil {
		add("delta.autoOptimize.autoCompact", strconv.FormatBool(*p.AutoCompact))
	}
	if p.TargetFileSize != nil {
		add("delta.targetFileSize", strconv.FormatInt(p.TargetFileSize.Value(), 10))
	}
	if p.DeletedFileRetention != nil {
		add("delta.deletedFileRetentionDuration", deltaInterval(p.DeletedFileRetention.Seconds()))
	}
	if p.LogRetention != nil {
		add("delta.logRetentionDuration", deltaInterval(p.LogRetention.Seconds()))
	}
	if p.CheckpointInterval != nil {
		add("delta.checkpointInterval", strconv.Itoa(int(*p.CheckpointInterval)))
	}
	if p.DataSkippingNumIndexedCols != nil {
		add("delta.dataSkippingNumIndexedCols", strconv.Itoa(int(*p.DataSkippingNumIndexedCols)))
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range p.Extra {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		if strings.Contains(k, "=") {
			return nil, fmt.Errorf("spec.properties.extra key %q contains '=', which no Delta property name does", k)
		}
		add(k, p.Extra[k])
	}
	return out, nil
}

// deltaInterval renders a duration as Delta's interval syntax, e.g. "interval 604800 seconds".
func deltaInterval(seconds float64) string {
	return "interval " + strconv.FormatInt(int64(seconds), 10) + " seconds"
}

// maintainArgs is `maintain <loc>` with one flag group per enabled step, in the order the worker runs them,
// and the Operations the run performs. Compaction and clustering may both be passed: the worker picks by the
// table's clustering columns. ops is empty when no step is enabled.
func maintainArgs(p *deltav1.OptimizePolicy, table *deltav1.DeltaTable) (args []string, ops []deltav1.Operation, err error) {
	args = []string{"maintain", table.Spec.Location}
	s := &p.Spec
	clustered := table.IsClustered()
	var zorder []string
	if p.ClusteringEnabled() && s.Clustering != nil && !clustered {
		zorder = s.Clustering.ZOrderBy
	}
	if p.CompactionEnabled() || len(zorder) > 0 {
		args = append(args, "--optimize")
		ops = append(ops, deltav1.OperationOptimize)
		if c := s.Compaction; c != nil {
			if c.TargetFileSize != nil {
				args = append(args, "--target-file-size", strconv.FormatInt(c.TargetFileSize.Value(), 10))
			}
			if c.MinFileSize != nil {
				args = append(args, "--min-file-size", strconv.FormatInt(c.MinFileSize.Value(), 10))
			}
			if c.MaxDeletedRowsRatio != nil {
				args = append(args, "--max-deleted-rows-ratio", formatFloat(*c.MaxDeletedRowsRatio))
			}
			if c.Where != "" {
				args = append(args, "--where", c.Where)
			}
		}
		if len(zorder) > 0 {
			if err := checkColumnList("spec.clustering.zOrderBy", zorder); err != nil {
				return nil, nil, err
			}
			args = append(args, "--zorder-by", strings.Join(zorder, ","))
		}
	}
	if p.ClusteringEnabled() && clustered {
		args = append(args, "--cluster")
		ops = append(ops, deltav1.OperationCluster)
		if c := s.Clustering; c != nil {
			if c.Mode == deltav1.ClusteringFull {
				args = append(args, "--full")
			} else if c.MaxQualityGap != nil {
				args = append(args, "--max-quality-gap", formatFloat(*c.MaxQualityGap))
			}
			if ar := c.AutoRecluster; ar != nil {
				on := ar.Enabled == nil || *ar.Enabled
				args = append(args, "--auto-recluster="+strconv.FormatBool(on))
				if on && ar.MinOffendingFiles != nil {
					args = append(args, "--min-offending-files", strconv.Itoa(int(*ar.MinOffendingFiles)))
				}
				if on && ar.MinOverlapThreshold != nil {
					args = append(args, "--min-overlap-threshold", formatFloat(*ar.MinOverlapThreshold))
				}
			}
		}
	}
	if p.VacuumEnabled() {
		v := s.Vacuum
		args = append(args, "--vacuum")
		ops = append(ops, deltav1.OperationVacuum)
		if v.Retention != nil {
			args = append(args, "--retention", v.Retention.Duration.String())
		}
		if v.AllowShortRetention {
			args = append(args, "--allow-short-retention")
		}
		if v.Mode != "" {
			args = append(args, "--vacuum-mode", strings.ToLower(string(v.Mode)))
		}
		if v.DryRun {
			args = append(args, "--dry-run")
		}
	}
	if p.CheckpointEnabled() {
		args = append(args, "--checkpoint")
		ops = append(ops, deltav1.OperationCheckpoint)
		if s.Checkpoint == nil || s.Checkpoint.LogCleanup == nil || *s.Checkpoint.LogCleanup {
			args = append(args, "--log-cleanup")
		}
	}
	return args, ops, nil
}

// checkColumnList rejects column names that a comma-separated flag cannot carry.
func checkColumnList(field string, cols []string) error {
	for _, c := range cols {
		if strings.Contains(c, ",") {
			return fmt.Errorf("%s column %q contains a comma, which the worker's column-list flag cannot express; rename the column", field, c)
		}
	}
	return nil
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
