package envtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// invalidManifests are mistakes users make, each with the part of the API server's message that tells them
// how to fix it. Every one must be rejected at admission, before any controller sees it.
var invalidManifests = []struct {
	name string
	kind string
	spec string
	want string
}{
	// DeltaTable
	{"table without location", "DeltaTable", `{}`, "spec.location: Required value"},
	{"table with http location", "DeltaTable", `{location: "http://bucket/t"}`, "location must be s3://<bucket>[/prefix]"},
	{"table with bucket name too short", "DeltaTable", `{location: "s3://a/t"}`, "location must be s3://<bucket>[/prefix]"},
	{"table with relative file location", "DeltaTable", `{location: "file:./tables/t"}`, "location must be s3://<bucket>[/prefix]"},
	{"table with both credential sources", "DeltaTable",
		`{location: "s3://lake/t", storage: {s3: {credentials: {secretRef: {name: s3}, serviceAccountName: reader}}}}`,
		"set exactly one of credentials.secretRef"},
	{"table with empty credentials", "DeltaTable", `{location: "s3://lake/t", storage: {s3: {credentials: {}}}}`,
		"set exactly one of credentials.secretRef"},
	{"table with s3 settings on a file location", "DeltaTable",
		`{location: "file:///data/t", storage: {s3: {region: us-east-1}, local: {claimName: data}}}`,
		"storage.s3 applies only to s3:// locations"},
	{"file table without a volume", "DeltaTable", `{location: "file:///data/t"}`, "a file:// location needs storage.local.claimName"},
	{"file table outside its mount path", "DeltaTable",
		`{location: "file:///tables/t", storage: {local: {claimName: data}}}`, "a file:// location must lie under storage.local.mountPath"},
	{"table with a bad endpoint", "DeltaTable", `{location: "s3://lake/t", storage: {s3: {endpoint: "minio:9000"}}}`,
		"spec.storage.s3.endpoint: Invalid value"},
	{"table with five clustering columns", "DeltaTable", `{location: "s3://lake/t", clusterBy: [a, b, c, d, e]}`,
		"must have at most 4 items"},
	{"table with duplicate clustering columns", "DeltaTable", `{location: "s3://lake/t", clusterBy: [a, b, a]}`,
		"clusterBy columns must be distinct"},
	{"table with an empty clustering column", "DeltaTable", `{location: "s3://lake/t", clusterBy: [""]}`,
		"should be at least 1 chars long"},
	{"table with a non-delta extra property", "DeltaTable",
		`{location: "s3://lake/t", properties: {extra: {"spark.sql.shuffle.partitions": "8"}}}`,
		"properties.extra keys must start with 'delta.'"},
	{"table repeating a typed property in extra", "DeltaTable",
		`{location: "s3://lake/t", properties: {extra: {"delta.targetFileSize": "1g"}}}`,
		"properties.extra must not repeat a typed property"},
	{"table with checkpoint interval 0", "DeltaTable", `{location: "s3://lake/t", properties: {checkpointInterval: 0}}`,
		"should be greater than or equal to 1"},
	{"table with a tiny target file size", "DeltaTable", `{location: "s3://lake/t", properties: {targetFileSize: 10Ki}}`,
		"targetFileSize must be between 1Mi and 16Gi"},
	{"table with a short retention", "DeltaTable", `{location: "s3://lake/t", properties: {deletedFileRetention: 10m}}`,
		"deletedFileRetention must be at least 1h"},
	{"table inspected every second", "DeltaTable", `{location: "s3://lake/t", inspectInterval: 1s}`,
		"inspectInterval must be at least 1m"},
	{"table with a negative backoff limit", "DeltaTable", `{location: "s3://lake/t", jobTemplate: {backoffLimit: -1}}`,
		"should be greater than or equal to 0"},
	// OptimizePolicy
	{"policy without targets", "OptimizePolicy", `{targets: {}}`, "targets needs tableNames or a selector"},
	{"policy with a four-field schedule", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 3 * *"}`,
		"schedule must have exactly five space-separated fields"},
	{"policy with a six-field schedule", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 0 3 * * *"}`,
		"schedule must have exactly five space-separated fields"},
	{"policy with a time zone in the schedule", "OptimizePolicy",
		`{targets: {tableNames: [t]}, schedule: "CRON_TZ=UTC 0 3 * *"}`, "set spec.timeZone instead"},
	{"policy with an unknown concurrency policy", "OptimizePolicy", `{targets: {tableNames: [t]}, concurrencyPolicy: Queue}`,
		`supported values: "Allow", "Forbid", "Replace"`},
	{"policy with an unknown clustering mode", "OptimizePolicy", `{targets: {tableNames: [t]}, clustering: {mode: Partial}}`,
		`supported values: "Incremental", "Full"`},
	{"policy with minOffendingFiles 1", "OptimizePolicy",
		`{targets: {tableNames: [t]}, clustering: {autoRecluster: {minOffendingFiles: 1}}}`, "should be greater than or equal to 2"},
	{"policy with a low overlap threshold", "OptimizePolicy",
		`{targets: {tableNames: [t]}, clustering: {autoRecluster: {minOverlapThreshold: 0.2}}}`,
		"minOverlapThreshold must be in (0.25, 1.0]"},
	{"policy with a zero quality gap", "OptimizePolicy",
		`{targets: {tableNames: [t]}, clustering: {maxQualityGap: 0}}`, "maxQualityGap must be in (0, 1.0]"},
	{"policy with a quality gap above 1", "OptimizePolicy",
		`{targets: {tableNames: [t]}, clustering: {maxQualityGap: 1.5}}`, "maxQualityGap must be in (0, 1.0]"},
	{"policy with a deleted-rows ratio above 1", "OptimizePolicy",
		`{targets: {tableNames: [t]}, compaction: {maxDeletedRowsRatio: 1.5}}`, "should be less than or equal to 1"},
	{"policy with a zero target file size", "OptimizePolicy", `{targets: {tableNames: [t]}, compaction: {targetFileSize: "0"}}`,
		"targetFileSize must be between 1Mi and 16Gi"},
	{"policy with five z-order columns", "OptimizePolicy", `{targets: {tableNames: [t]}, clustering: {zOrderBy: [a, b, c, d, e]}}`,
		"must have at most 4 items"},
	{"policy with a negative vacuum retention", "OptimizePolicy", `{targets: {tableNames: [t]}, vacuum: {retention: -1h}}`,
		"retention must not be negative"},
	{"policy with an unknown vacuum mode", "OptimizePolicy", `{targets: {tableNames: [t]}, vacuum: {mode: Deep}}`,
		`supported values: "Full", "Lite"`},
	{"policy keeping 11 runs", "OptimizePolicy", `{targets: {tableNames: [t]}, successfulRunsHistoryLimit: 11}`,
		"should be less than or equal to 10"},
	{"policy with a negative starting deadline", "OptimizePolicy", `{targets: {tableNames: [t]}, startingDeadlineSeconds: -5}`,
		"should be greater than or equal to 0"},
	{"policy with an uppercase table name", "OptimizePolicy", `{targets: {tableNames: [Orders]}}`,
		"spec.targets.tableNames[0]: Invalid value"},
	// StreamIngest
	{"ingest with two sources", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: parquet}, deltaTable: {name: src}}}`,
		"set exactly one of source.files or source.deltaTable"},
	{"ingest without a source", "StreamIngest", `{target: t, source: {}}`, "set exactly one of source.files or source.deltaTable"},
	{"ingest of an unknown format", "StreamIngest", `{target: t, source: {files: {location: "s3://lake/in", format: avro}}}`,
		`supported values: "parquet", "json", "csv"`},
	{"ingest with zero files per trigger", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json}}, maxFilesPerTrigger: 0}`,
		"should be greater than or equal to 1"},
	{"ingest with zero bytes per trigger", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json}}, maxBytesPerTrigger: "0"}`,
		"maxBytesPerTrigger must be positive"},
	{"upsert without keys", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, mode: Upsert}`,
		"modes Upsert, Update and Delete need keys"},
	{"delete without keys", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, mode: Delete, keys: []}`,
		"modes Upsert, Update and Delete need keys"},
	{"keys on an append stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, keys: [id]}`, "keys apply only to modes Upsert, Update and Delete"},
	{"keys on an overwrite stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, mode: Overwrite, keys: [id]}`, "keys apply only to modes Upsert, Update and Delete"},
	{"a delete column on an update stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, mode: Update, keys: [id], deleteConditionColumn: gone}`,
		"deleteConditionColumn applies only to mode Upsert"},
	{"orderBy on an append stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, orderBy: ts}`, "orderBy applies only to modes Upsert, Update and Delete"},
	{"an overwrite scope on an upsert stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, mode: Upsert, keys: [id], overwriteScope: Partitions}`,
		"overwriteScope applies only to mode Overwrite"},
	{"an unknown overwrite scope", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, mode: Overwrite, overwriteScope: Files}`, "supported values: \"Table\", \"Partitions\""},
	{"an unknown mode", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, mode: Merge}`,
		"supported values: \"Append\", \"Upsert\", \"Update\", \"Delete\", \"Overwrite\", \"TruncateInsert\""},
	{"rescued data with an update method", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, mode: Upsert, keys: [id], schemaEvolution: rescue}`, "schemaEvolution rescue is for mode Append"},
	{"partition pruning on an append stream", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, partitionPruning: [day]}`, "partitionPruning applies only to modes Upsert, Update and Delete"},
	{"ingest every second", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, trigger: {interval: 1s}}`,
		"trigger.interval must be at least 10s"},
	{"ingest from an http location", "StreamIngest", `{target: t, source: {files: {location: "https://x/in", format: csv}}}`,
		"source.files.location must be an s3:// or file:/// URI"},
	{"ingest with an unknown schema evolution mode", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json}}, schemaEvolution: merge}`,
		`supported values: "addNewColumns", "rescue", "failOnNewColumns", "none"`},
	{"ingest with mergeSchema and another evolution mode", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json}}, mergeSchema: true, schemaEvolution: rescue}`,
		"mergeSchema: true means schemaEvolution addNewColumns"},
	{"ingest that ignores bad files silently", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json}}, onBadFile: ignore}`, `supported values: "fail", "skip"`},
	{"ingest with csv options on parquet", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: parquet, options: {header: "true"}}}}`, "parquet takes no reader options"},
	{"ingest with a csv option on json", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: json, options: {delimiter: ";"}}}}`, "json options are multiLine"},
	{"ingest with a misspelt csv option", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: csv, options: {headers: "true"}}}}`, "csv options are header"},
	{"ingest with header yes", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: csv, options: {Header: "yes"}}}}`, "take true or false"},
	{"ingest partitioned by too many columns", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: csv}}, partitionBy: [a, b, c, d, e, f, g, h, i]}`, "must have at most 8 items"},
	{"ingest with a full listing every 0 listings", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: csv}}, fullListingEvery: 0}`, "should be greater than or equal to 1"},
}

func TestAPIServer_RejectsInvalidManifestsWithActionableMessages(t *testing.T) {
	ns := newNamespace(t)
	if len(invalidManifests) < 25 {
		t.Fatalf("the invalid-manifest table has %d cases; keep at least 25", len(invalidManifests))
	}
	for _, tc := range invalidManifests {
		t.Run(tc.name, func(t *testing.T) {
			obj := manifest(t, tc.kind, "invalid", ns, tc.spec)
			err := k8sClient.Create(context.Background(), obj)
			if err == nil {
				t.Fatalf("the API server accepted an invalid %s", tc.kind)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not say %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestAPIServer_AcceptsEverySample(t *testing.T) {
	ns := newNamespace(t)
	objs := samples(t)
	if len(objs) < 3 {
		t.Fatalf("found %d sample objects, want one of each kind at least", len(objs))
	}
	kinds := map[string]bool{}
	for _, obj := range objs {
		obj.SetNamespace(ns)
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Errorf("sample %s/%s rejected: %v", obj.GetKind(), obj.GetName(), err)
		}
		kinds[obj.GetKind()] = true
	}
	for _, k := range []string{"DeltaTable", "OptimizePolicy", "StreamIngest"} {
		if !kinds[k] {
			t.Errorf("config/samples has no %s", k)
		}
	}
}

// manifest builds an object of the given kind from a YAML spec.
func manifest(t *testing.T, kind, name, ns, spec string) *unstructured.Unstructured {
	t.Helper()
	var specMap map[string]any
	if err := yaml.Unmarshal([]byte(spec), &specMap); err != nil {
		t.Fatalf("bad test spec %q: %v", spec, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "deltakeeper.io/v1",
		"kind":       kind,
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"spec":       specMap,
	}}
	return obj
}

// samples reads every object in config/samples.
func samples(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "config", "samples", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no samples in config/samples: %v", err)
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var m map[string]any
			if err := dec.Decode(&m); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if m != nil {
				objs = append(objs, &unstructured.Unstructured{Object: m})
			}
		}
	}
	return objs
}
