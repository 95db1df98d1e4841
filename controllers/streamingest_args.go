package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The ingest command line, the contract with `deltakeeper worker ingest` (worker/cli/ingest.go).

// ingestMaxBatches bounds the batches of one interval-mode Job; the time budget ends it long before.
const ingestMaxBatches = 100000

// minIngestBudget is the shortest time budget of an interval-mode Job.
const minIngestBudget = 10 * time.Second

// ingestBudget is how long an interval-mode Job keeps starting batches: half the interval (at least 10s).
// A Job reports its batches when it exits, so this bounds how late a committed batch shows in status: the
// budget, plus the batch that was running when it ran out, plus the pod's exit; short Jobs keep that within
// the interval without the manager ever reading the table or the worker writing to the API server.
func ingestBudget(interval time.Duration) time.Duration {
	return max(interval/2, minIngestBudget)
}

// ingestArgs is `ingest <table> --source <prefix> --format <f> …`: every limit and option of the spec, the
// stream's checkpoint, and either --available-now or a batch loop bounded by the time budget. The mode flags
// are passed for the modes other than Append only, so that appends run on every worker that has `ingest`.
func ingestArgs(si *deltav1.StreamIngest, table *deltav1.DeltaTable) ([]string, error) {
	s := &si.Spec
	files := s.Source.Files
	if files == nil {
		return nil, fmt.Errorf("source.deltaTable cannot be ingested yet; ingest files with source.files")
	}
	args := []string{"ingest", table.Spec.Location, "--source", files.Location, "--format", files.Format}
	keys := make([]string, 0, len(files.Options))
	for k := range files.Options {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		args = append(args, "--option", k+"="+files.Options[k])
	}
	args = append(args, "--checkpoint", si.CheckpointURI(table))
	if s.MaxFilesPerTrigger != nil {
		args = append(args, "--max-files-per-trigger", strconv.Itoa(int(*s.MaxFilesPerTrigger)))
	}
	if s.MaxBytesPerTrigger != nil {
		args = append(args, "--max-bytes-per-trigger", strconv.FormatInt(s.MaxBytesPerTrigger.Value(), 10))
	}
	if si.IsAvailableNow() {
		args = append(args, "--available-now")
	} else {
		args = append(args, "--max-batches", strconv.Itoa(ingestMaxBatches), "--time-budget", ingestBudget(si.Interval()).String())
	}
	args = append(args, "--schema-evolution", string(s.EffectiveSchemaEvolution()))
	if s.OnBadFile != "" {
		args = append(args, "--on-bad-file", s.OnBadFile)
	}
	if len(s.PartitionBy) > 0 {
		if err := checkColumnList("spec.partitionBy", s.PartitionBy); err != nil {
			return nil, err
		}
		args = append(args, "--partition-by", strings.Join(s.PartitionBy, ","))
	}
	if len(table.Spec.ClusterBy) > 0 {
		// A table the first batch creates gets the declared clustering columns at once.
		if err := checkColumnList("DeltaTable spec.clusterBy", table.Spec.ClusterBy); err != nil {
			return nil, err
		}
		args = append(args, "--cluster-by", strings.Join(table.Spec.ClusterBy, ","))
	}
	if s.IncludeExistingFiles != nil && !*s.IncludeExistingFiles {
		args = append(args, "--include-existing-files=false")
	}
	if s.AllowOverwrites {
		args = append(args, "--allow-overwrites")
	}
	if s.OptimizeWrite != nil {
		args = append(args, "--optimize-write", strconv.FormatBool(*s.OptimizeWrite))
	}
	if s.AutoCompact != nil {
		args = append(args, "--auto-compact", strconv.FormatBool(*s.AutoCompact))
	}
	if s.FullListingEvery != nil {
		args = append(args, "--full-listing-every", strconv.Itoa(int(*s.FullListingEvery)))
	}
	return modeArgs(si, args)
}

// modeArgs appends the update method: --mode and, for the keyed modes, --keys, --delete-column,
// --order-by and --partition-pruning; for Overwrite, --overwrite-scope.
func modeArgs(si *deltav1.StreamIngest, args []string) ([]string, error) {
	s := &si.Spec
	mode := si.EffectiveMode()
	if mode == deltav1.IngestAppend {
		return args, nil
	}
	args = append(args, "--mode", strings.ToLower(string(mode)))
	if mode.IsKeyed() {
		if len(s.Keys) == 0 {
			return nil, fmt.Errorf("mode %s needs spec.keys", mode)
		}
		if err := checkColumnList("spec.keys", s.Keys); err != nil {
			return nil, err
		}
		args = append(args, "--keys", strings.Join(s.Keys, ","))
		if s.DeleteConditionColumn != "" {
			args = append(args, "--delete-column", s.DeleteConditionColumn)
		}
		if s.OrderBy != "" {
			args = append(args, "--order-by", s.OrderBy)
		}
		if len(s.PartitionPruning) > 0 {
			if err := checkColumnList("spec.partitionPruning", s.PartitionPruning); err != nil {
				return nil, err
			}
			args = append(args, "--partition-pruning", strings.Join(s.PartitionPruning, ","))
		}
	}
	if mode == deltav1.IngestOverwrite && s.OverwriteScope != "" {
		args = append(args, "--overwrite-scope", strings.ToLower(string(s.OverwriteScope)))
	}
	return args, nil
}
