package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func stream(name string) *deltav1.StreamIngest {
	return &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lake", UID: types.UID("uid-" + name), Generation: 1},
		Spec: deltav1.StreamIngestSpec{
			Source: deltav1.IngestSource{Files: &deltav1.FileSource{Location: "s3://drop/orders/", Format: "csv",
				Options: map[string]string{"header": "true", "delimiter": ";"}}},
			Target: "t", MaxFilesPerTrigger: ptr.To[int32](1000), OnBadFile: "fail",
		},
	}
}

func TestIngestArgs_IntervalStreamRunsBatchesForHalfTheInterval(t *testing.T) {
	si := stream("orders")
	si.Spec.Trigger = &deltav1.IngestTrigger{Interval: &metav1.Duration{Duration: 2 * time.Minute}}
	si.Spec.MaxBytesPerTrigger = ptr.To(resource.MustParse("1Gi"))
	si.Spec.PartitionBy = []string{"day"}
	si.Spec.IncludeExistingFiles = ptr.To(false)
	si.Spec.AutoCompact = ptr.To(true)
	got, err := ingestArgs(si, s3Table("t").obj())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ingest", "s3://lakehouse/sales/t", "--source", "s3://drop/orders/", "--format", "csv",
		"--option", "delimiter=;", "--option", "header=true",
		"--checkpoint", "s3://lakehouse/sales/t/_deltakeeper/streams/lake.orders",
		"--max-files-per-trigger", "1000", "--max-bytes-per-trigger", "1073741824",
		"--max-batches", "100000", "--time-budget", "1m0s",
		"--schema-evolution", "failOnNewColumns", "--on-bad-file", "fail", "--partition-by", "day",
		"--include-existing-files=false", "--auto-compact", "true"}
	if !slices.Equal(got, want) {
		t.Errorf("ingestArgs =\n%q\nwant\n%q", got, want)
	}
}

func TestIngestArgs_AvailableNowDrainsAndAppendPassesNoModeFlags(t *testing.T) {
	si := stream("orders")
	si.Spec.Trigger = &deltav1.IngestTrigger{AvailableNow: true}
	si.Spec.CheckpointLocation = "s3://state/orders"
	si.Spec.MergeSchema = true
	got, err := ingestArgs(si, s3Table("t").clusterBy("a").obj())
	if err != nil {
		t.Fatal(err)
	}
	line := strings.Join(got, " ")
	for _, want := range []string{"--available-now", "--checkpoint s3://state/orders", "--schema-evolution addNewColumns", "--cluster-by a"} {
		if !strings.Contains(line, want) {
			t.Errorf("args %q lack %q", line, want)
		}
	}
	for _, not := range []string{"--time-budget", "--mode", "--keys"} {
		if strings.Contains(line, not) {
			t.Errorf("args %q carry %q", line, not)
		}
	}
}

func TestIngestArgs_UpdateMethodsPassModeKeysAndScope(t *testing.T) {
	cases := []struct {
		name string
		set  func(*deltav1.StreamIngestSpec)
		want string
	}{
		{"upsert with deletes", func(s *deltav1.StreamIngestSpec) {
			s.Mode, s.Keys, s.DeleteConditionColumn, s.OrderBy = deltav1.IngestUpsert, []string{"id", "region"}, "deleted", "ts"
			s.PartitionPruning = []string{"region"}
		}, "--mode upsert --keys id,region --delete-column deleted --order-by ts --partition-pruning region"},
		{"update", func(s *deltav1.StreamIngestSpec) { s.Mode, s.Keys = deltav1.IngestUpdate, []string{"id"} }, "--mode update --keys id"},
		{"delete", func(s *deltav1.StreamIngestSpec) { s.Mode, s.Keys = deltav1.IngestDelete, []string{"id"} }, "--mode delete --keys id"},
		{"overwrite partitions", func(s *deltav1.StreamIngestSpec) {
			s.Mode, s.OverwriteScope = deltav1.IngestOverwrite, deltav1.OverwritePartitions
		}, "--mode overwrite --overwrite-scope partitions"},
		{"truncate insert", func(s *deltav1.StreamIngestSpec) { s.Mode = deltav1.IngestTruncateInsert }, "--mode truncateinsert"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			si := stream("orders")
			c.set(&si.Spec)
			got, err := ingestArgs(si, s3Table("t").obj())
			if err != nil {
				t.Fatal(err)
			}
			if line := strings.Join(got, " "); !strings.HasSuffix(line, c.want) {
				t.Errorf("args %q do not end in %q", line, c.want)
			}
		})
	}
}

func TestIngestArgs_RefusesWhatTheFlagsCannotCarry(t *testing.T) {
	si := stream("orders")
	si.Spec.Mode, si.Spec.Keys = deltav1.IngestUpsert, []string{"a,b"}
	if _, err := ingestArgs(si, s3Table("t").obj()); err == nil || !strings.Contains(err.Error(), "comma") {
		t.Errorf("a key with a comma: %v", err)
	}
	si = stream("orders")
	si.Spec.Source = deltav1.IngestSource{DeltaTable: &deltav1.DeltaTableSource{Name: "raw"}}
	if _, err := ingestArgs(si, s3Table("t").obj()); err == nil {
		t.Error("a DeltaTable source became a Job")
	}
}

func TestIngestBudget_IsHalfTheIntervalAtLeastTenSeconds(t *testing.T) {
	for in, want := range map[time.Duration]time.Duration{time.Minute: 30 * time.Second, 10 * time.Second: 10 * time.Second, time.Hour: 30 * time.Minute} {
		if got := ingestBudget(in); got != want {
			t.Errorf("ingestBudget(%v) = %v, want %v", in, got, want)
		}
	}
}
