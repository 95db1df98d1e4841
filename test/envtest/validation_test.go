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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
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
	{"policy spread over 0 pods", "OptimizePolicy", `{targets: {tableNames: [t]}, parallelism: 0}`,
		"spec.parallelism: Invalid value: 0: spec.parallelism in body should be greater than or equal to 1"},
	{"policy spread over 33 pods", "OptimizePolicy", `{targets: {tableNames: [t]}, parallelism: 33}`,
		"spec.parallelism: Invalid value: 33: spec.parallelism in body should be less than or equal to 32"},
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
		"source.files.location must be s3://<bucket>[/prefix]"},
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
	// What users really write (issue 15): each message names the field, echoes the value and says what to write.
	{"table inspected every day as 1d", "DeltaTable", `{location: "s3://lake/t", inspectInterval: 1d}`,
		`spec.inspectInterval: Invalid value: "1d": inspectInterval "1d" is not a duration: use 24h, 168h, 720h`},
	{"table retention of 7d", "DeltaTable", `{location: "s3://lake/t", properties: {deletedFileRetention: 7d}}`,
		`deletedFileRetention "7d" is not a duration: use 24h, 168h, 720h`},
	{"table log retention as interval 30 days", "DeltaTable", `{location: "s3://lake/t", properties: {logRetention: "interval 30 days"}}`,
		`logRetention "interval 30 days" is not a duration: use 24h, 168h, 720h`},
	{"table target file size 256 MB", "DeltaTable", `{location: "s3://lake/t", properties: {targetFileSize: "256 MB"}}`,
		`spec.properties.targetFileSize: Invalid value: "256 MB": targetFileSize "256 MB" is not a size: use 256Mi or 1Gi`},
	{"policy target file size 1GB", "OptimizePolicy", `{targets: {tableNames: [t]}, compaction: {targetFileSize: 1GB}}`,
		`compaction.targetFileSize "1GB" is not a size: use 256Mi or 1Gi`},
	{"policy unclustered bytes 10 GiB", "OptimizePolicy", `{targets: {tableNames: [t]}, triggers: {unclusteredBytes: "10 GiB"}}`,
		`triggers.unclusteredBytes "10 GiB" is not a size: use 256Mi or 1Gi`},
	{"ingest of 1GB per trigger", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, maxBytesPerTrigger: 1GB}`,
		`maxBytesPerTrigger "1GB" is not a size: use 256Mi or 1Gi`},
	{"ingest every interval 30 days", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, trigger: {interval: "interval 30 days"}}`,
		`trigger.interval "interval 30 days" is not a duration: use 24h, 168h, 720h`},
	{"policy vacuum retention 7d", "OptimizePolicy", `{targets: {tableNames: [t]}, vacuum: {retention: 7d}}`,
		`vacuum.retention "7d" is not a duration: use 24h, 168h, 720h`},
	{"table clustering columns equal ignoring case", "DeltaTable", `{location: "s3://lake/t", clusterBy: [Region, day, region]}`,
		"clusterBy columns must be distinct ignoring case (Delta column names are case-insensitive)"},
	{"policy z-order columns equal ignoring case", "OptimizePolicy", `{targets: {tableNames: [t]}, clustering: {zOrderBy: [ID, id]}}`,
		"zOrderBy columns must be distinct ignoring case"},
	{"policy schedule with a question mark", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 3 ? * *"}`,
		`schedule "0 3 ? * *" uses ?, which Kubernetes-style cron does not need: write * for any day`},
	{"policy schedule at minute 60", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "60 3 * * *"}`,
		`schedule "60 3 * * *": minute field "60" is not in 0-59`},
	{"policy schedule at hour 24", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 24 * * *"}`,
		`schedule "0 24 * * *": hour field "24" is not in 0-23`},
	{"policy schedule on day 32", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 3 1,32 * *"}`,
		`day-of-month field "1,32" is not in 1-31`},
	{"policy schedule in month 13", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 3 * 13 *"}`,
		`month field "13" is not in 1-12 or JAN-DEC`},
	{"policy schedule on weekday 7", "OptimizePolicy", `{targets: {tableNames: [t]}, schedule: "0 3 * * 1-7"}`,
		`day-of-week field "1-7" is not in 0-6 (Sunday is 0) or SUN-SAT`},
	{"policy minFileSize above targetFileSize", "OptimizePolicy",
		`{targets: {tableNames: [t]}, compaction: {targetFileSize: 128Mi, minFileSize: 1Gi}}`,
		"compaction.minFileSize 1Gi is above compaction.targetFileSize 128Mi: files below minFileSize are compacted into files of targetFileSize, so set minFileSize at most targetFileSize"},
	{"policy pod label key with two slashes", "OptimizePolicy", `{targets: {tableNames: [t]}, jobTemplate: {podLabels: {"a/b/c": x}}}`,
		"podLabels keys must be label keys: an optional DNS prefix and /"},
	{"table memory limit below its request", "DeltaTable",
		`{location: "s3://lake/t", jobTemplate: {resources: {requests: {memory: 2Gi}, limits: {memory: 512Mi}}}}`,
		"resources.limits.memory 512Mi is below resources.requests.memory 2Gi: the limit must be at least the request"},
	{"ingest cpu limit below its request", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, jobTemplate: {resources: {requests: {cpu: "2"}, limits: {cpu: 500m}}}}`,
		"resources.limits.cpu 500m is below resources.requests.cpu 2"},
	{"policy toleration operator in lower case", "OptimizePolicy",
		`{targets: {tableNames: [t]}, jobTemplate: {tolerations: [{key: spot, operator: exists}]}}`,
		"tolerations operator must be Exists or Equal (spelt so: case matters)"},
	{"table toleration with an unknown effect", "DeltaTable",
		`{location: "s3://lake/t", jobTemplate: {tolerations: [{key: spot, operator: Exists, effect: NoScheduling}]}}`,
		"tolerations effect must be NoSchedule, PreferNoSchedule or NoExecute"},
	{"policy vacuum retention 0 without allowShortRetention", "OptimizePolicy",
		`{targets: {tableNames: [t]}, vacuum: {retention: 0s}}`,
		"vacuum.retention 0s deletes every unreferenced file at once, also files that running readers and time travel still need: set vacuum.allowShortRetention: true to confirm"},
	{"ingest from a bucket name S3 refuses", "StreamIngest", `{target: t, source: {files: {location: "s3://My_Bucket/in", format: csv}}}`,
		"source.files.location must be s3://<bucket>[/prefix]"},
	{"ingest from a one-letter bucket", "StreamIngest", `{target: t, source: {files: {location: "s3://a/in", format: csv}}}`,
		"source.files.location must be s3://<bucket>[/prefix]"},
	{"ingest checkpoint in a bucket S3 refuses", "StreamIngest",
		`{target: t, source: {deltaTable: {name: src}}, checkpointLocation: "s3://Checkpoints/x"}`, "checkpointLocation must be s3://<bucket>[/prefix]"},
	{"ingest from an uppercase DeltaTable name", "StreamIngest", `{target: t, source: {deltaTable: {name: Orders}}}`,
		`source.deltaTable.name "Orders" is not a DeltaTable name: lower-case letters, digits, - and .`},
	{"ingest into an uppercase DeltaTable name", "StreamIngest", `{target: Orders, source: {deltaTable: {name: src}}}`,
		`target "Orders" is not a DeltaTable name`},
	{"upsert with an empty key", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, mode: Upsert, keys: [""]}`,
		"keys must not be empty strings: name the columns that identify a row"},
	{"upsert with duplicate keys", "StreamIngest", `{target: t, source: {deltaTable: {name: src}}, mode: Upsert, keys: [id, ts, ID]}`,
		"keys must be distinct ignoring case (Delta column names are case-insensitive)"},
	{"ingest partitioned twice by one column", "StreamIngest",
		`{target: t, source: {files: {location: "s3://lake/in", format: csv}}, partitionBy: [day, Day]}`, "partitionBy columns must be distinct ignoring case"},
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
			// A rule that failed to evaluate (a value CEL could not convert) and resource.Quantity's raw pattern
			// tell a user nothing; neither does a second error about an empty value nobody wrote.
			for _, noise := range []string{"evaluating rule", "regular expression", "should match '^(\\+|-)?"} {
				if strings.Contains(err.Error(), noise) {
					t.Errorf("error contains %q:\n%v", noise, err)
				}
			}
			if strings.Contains(err.Error(), `Invalid value: ""`) && !strings.Contains(tc.spec, `""`) {
				t.Errorf("error reports an empty value the spec does not hold:\n%v", err)
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

// What admission cannot check, the controllers do: an image the manager may not run (a flag of the manager,
// not of the API), a pod label value (CEL cannot afford a regular expression over a map's unbounded values)
// and a time zone (the manager's time zone database decides). Each makes the object say so in a condition
// and an Event, and no Job starts for it.
func TestControllers_ReportWhatAdmissionCannotCheck(t *testing.T) {
	ctx, ns, _ := controllerTest(t)
	const evil = "evil.example.com/miner:1"
	notAllowed := `jobTemplate.image "` + evil + `" is not allowed: this manager runs only ` + testWorkerImage + ` (its --allowed-worker-images flag)`
	badLabel := `jobTemplate.podLabels value team="data platform" is not a label value`
	tableCase := func(name string, tmpl *deltav1.JobTemplate, want string) {
		t.Run("DeltaTable "+name, func(t *testing.T) {
			table := &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: deltav1.DeltaTableSpec{Location: "s3://lake/" + name, JobTemplate: tmpl}}
			if err := k8sClient.Create(ctx, table); err != nil {
				t.Fatal(err)
			}
			waitTable(t, table, "is InvalidSpec", func(tb *deltav1.DeltaTable) (bool, string) {
				ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
				return strings.HasPrefix(ready, "False/InvalidSpec: ") && strings.Contains(ready, want), ready
			})
			waitEvent(t, ns, name, "InvalidSpec", want)
			if jobs := tableJobs(t, ns, name, ""); len(jobs) != 0 {
				t.Errorf("Jobs started for an invalid table: %v", liveJobs(jobs))
			}
		})
	}
	tableCase("foreign-image", &deltav1.JobTemplate{Image: evil}, notAllowed)
	tableCase("bad-label", &deltav1.JobTemplate{PodLabels: map[string]string{"team": "data platform"}}, badLabel)

	policyCase := func(name string, spec deltav1.OptimizePolicySpec, wantReady, wantEvent string) {
		t.Run("OptimizePolicy "+name, func(t *testing.T) {
			spec.Targets = deltav1.PolicyTargets{TableNames: []string{"foreign-image"}}
			p := newPolicy(t, ns, name, spec)
			waitPolicy(t, p, "reports the spec", func(p *deltav1.OptimizePolicy) (bool, string) {
				ready := condition(p.Status.Conditions, deltav1.ConditionReady)
				return strings.HasPrefix(ready, wantReady), ready
			})
			waitEvent(t, ns, name, "InvalidSpec", wantEvent)
		})
	}
	policyCase("foreign-image", deltav1.OptimizePolicySpec{JobTemplate: &deltav1.JobTemplate{Image: evil}},
		"False/InvalidSpec: "+notAllowed, notAllowed)
	policyCase("bad-label", deltav1.OptimizePolicySpec{JobTemplate: &deltav1.JobTemplate{PodLabels: map[string]string{"team": "data platform"}}},
		"False/InvalidSpec: "+badLabel, badLabel)
	policyCase("mars", deltav1.OptimizePolicySpec{Schedule: "0 3 * * *", TimeZone: "Mars/Olympus_Mons"},
		`False/InvalidSchedule: timeZone "Mars/Olympus_Mons" is not an IANA time zone (e.g. Europe/Berlin)`, "is not an IANA time zone")

	t.Run("StreamIngest foreign-image", func(t *testing.T) {
		newTable(t, ns, "landing", nil)
		si := newStream(t, ns, "foreign-image", "landing", func(s *deltav1.StreamIngestSpec) {
			s.JobTemplate = &deltav1.JobTemplate{Image: evil}
		})
		waitStream(t, si, "is stalled", func(s *deltav1.StreamIngest) (bool, string) {
			stalled := condition(s.Status.Conditions, deltav1.ConditionStalled)
			return strings.HasPrefix(stalled, "True/InvalidSpec: ") && strings.Contains(stalled, notAllowed), stalled
		})
		waitEvent(t, ns, "foreign-image", "InvalidSpec", notAllowed)
		for _, j := range tableJobs(t, ns, "landing", "") {
			if j.Labels[deltav1.LabelOperation] == "ingest" {
				t.Errorf("ingest Job %s started with a foreign image", j.Name)
			}
		}
	})
}
