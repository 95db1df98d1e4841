package envtest

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Storage blocks that tests below combine into manifests.
const (
	azureKey = `{credentials: {accountKeySecretRef: {name: lake-key}}}`
	gcsKey   = `{credentials: {serviceAccountKeySecretRef: {name: gcs-key}}}`
)

// invalidCloudManifests are the mistakes a user can make with Azure and GCS locations, each with the part
// of the API server's message that says what to write instead.
var invalidCloudManifests = []struct {
	name string
	kind string
	spec string
	want string
}{
	{"azure location with an account that is no host", "DeltaTable",
		`{location: "abfss://c@acct.example.com/t", storage: {azure: ` + azureKey + `}}`, "location must be s3://<bucket>[/prefix], abfss://"},
	{"azure location without a container", "DeltaTable",
		`{location: "abfss://acct.dfs.core.windows.net/t", storage: {azure: ` + azureKey + `}}`, "location must be s3://<bucket>[/prefix], abfss://"},
	{"azure location with credentials in it", "DeltaTable",
		`{location: "abfss://c:secret@acct.dfs.core.windows.net/t", storage: {azure: ` + azureKey + `}}`, "location must be s3://<bucket>[/prefix], abfss://"},
	{"gcs bucket name too short", "DeltaTable", `{location: "gs://a/t", storage: {gcs: ` + gcsKey + `}}`,
		"location must be s3://<bucket>[/prefix], abfss://"},
	{"azure location without storage.azure", "DeltaTable", `{location: "abfss://c@acct.dfs.core.windows.net/t"}`,
		"an Azure location needs storage.azure.credentials"},
	{"az location without an account", "DeltaTable", `{location: "az://c/t", storage: {azure: ` + azureKey + `}}`,
		"an az:// location names no storage account: set storage.azure.account"},
	{"azure settings on an s3 location", "DeltaTable", `{location: "s3://lake/t", storage: {azure: ` + azureKey + `}}`,
		"storage.azure applies only to Azure locations"},
	{"azure without credentials", "DeltaTable", `{location: "abfss://c@acct.dfs.core.windows.net/t", storage: {azure: {}}}`,
		"spec.storage.azure.credentials: Required value"},
	{"azure with no credentials source", "DeltaTable",
		`{location: "abfss://c@acct.dfs.core.windows.net/t", storage: {azure: {credentials: {}}}}`,
		"set exactly one of storage.azure.credentials.accountKeySecretRef"},
	{"azure with two credentials sources", "DeltaTable",
		`{location: "wasbs://c@acct.blob.core.windows.net/t", storage: {azure: {credentials: {accountKeySecretRef: {name: k}, sasTokenSecretRef: {name: s}}}}}`,
		"set exactly one of storage.azure.credentials.accountKeySecretRef"},
	{"azure workload identity without a ServiceAccount", "DeltaTable",
		`{location: "abfss://c@acct.dfs.core.windows.net/t", storage: {azure: {credentials: {workloadIdentity: {}}}}}`,
		"workloadIdentity.serviceAccountName: Required value"},
	{"onelake with an account key", "DeltaTable",
		`{location: "abfss://ws@onelake.dfs.fabric.microsoft.com/lh.Lakehouse/Tables/t", storage: {azure: ` + azureKey + `}}`,
		"OneLake accepts only Entra ID tokens: use storage.azure.credentials.workloadIdentity"},
	{"azure endpoint without a scheme", "DeltaTable",
		`{location: "abfss://c@acct.dfs.core.windows.net/t", storage: {azure: {endpoint: "azurite:10000", credentials: {accountKeySecretRef: {name: k}}}}}`,
		"spec.storage.azure.endpoint: Invalid value"},
	{"gcs location without storage.gcs", "DeltaTable", `{location: "gs://lake/t"}`,
		"a gs:// location needs storage.gcs"},
	{"gcs settings on an azure location", "DeltaTable",
		`{location: "abfss://c@acct.dfs.core.windows.net/t", storage: {azure: ` + azureKey + `, gcs: ` + gcsKey + `}}`,
		"storage names exactly one of s3, local, azure or gcs"},
	{"gcs settings on an s3 location", "DeltaTable", `{location: "s3://lake/t", storage: {gcs: ` + gcsKey + `}}`,
		"storage.gcs applies only to gs:// locations"},
	{"empty storage", "DeltaTable", `{location: "s3://lake/t", storage: {}}`,
		"storage names exactly one of s3, local, azure or gcs"},
	{"gcs with neither credentials nor emulator", "DeltaTable", `{location: "gs://lake/t", storage: {gcs: {}}}`,
		"storage.gcs needs exactly one of credentials (Google Cloud) or emulatorHost"},
	{"gcs emulator with credentials", "DeltaTable",
		`{location: "gs://lake/t", storage: {gcs: {emulatorHost: "fake-gcs:4443", credentials: {workloadIdentity: {serviceAccountName: r}}}}}`,
		"storage.gcs needs exactly one of credentials (Google Cloud) or emulatorHost"},
	{"gcs with two credentials sources", "DeltaTable",
		`{location: "gs://lake/t", storage: {gcs: {credentials: {serviceAccountKeySecretRef: {name: k}, workloadIdentity: {serviceAccountName: r}}}}}`,
		"set exactly one of storage.gcs.credentials.serviceAccountKeySecretRef"},
	{"gcs with no credentials source", "DeltaTable", `{location: "gs://lake/t", storage: {gcs: {credentials: {}}}}`,
		"set exactly one of storage.gcs.credentials.serviceAccountKeySecretRef"},
	{"ingest from a wasb location without an account host", "StreamIngest",
		`{target: t, source: {files: {location: "wasbs:/c/in", format: csv}}}`,
		"source.files.location must be s3://<bucket>[/prefix], abfss://<container>@<account>.dfs.core.windows.net[/prefix]"},
	{"ingest checkpoint on http", "StreamIngest",
		`{target: t, source: {files: {location: "gs://lake/in", format: csv}}, checkpointLocation: "https://x/cp"}`,
		"checkpointLocation must be s3://<bucket>[/prefix], abfss://"},
}

// validCloudManifests are the location forms the worker parses (worker/storage.ParseLocation) with the
// storage settings each needs; the API server must accept every one.
var validCloudManifests = []struct {
	name string
	kind string
	spec string
}{
	{"adls gen2 with an account key", "DeltaTable",
		`{location: "abfss://lake@acct.dfs.core.windows.net/sales/orders", storage: {azure: ` + azureKey + `}}`},
	{"abfs with a SAS token", "DeltaTable",
		`{location: "abfs://lake@acct.dfs.core.windows.net/t", storage: {azure: {credentials: {sasTokenSecretRef: {name: sas, key: token}}}}}`},
	{"wasbs on a sovereign cloud", "DeltaTable",
		`{location: "wasbs://lake@acct.blob.core.chinacloudapi.cn/t", storage: {azure: ` + azureKey + `}}`},
	{"az with the account and an emulator endpoint", "DeltaTable",
		`{location: "az://lake/t", storage: {azure: {account: devstoreaccount1, endpoint: "http://10.77.0.1:10000/devstoreaccount1", credentials: {accountKeySecretRef: {name: k}}}}}`},
	{"onelake with workload identity", "DeltaTable",
		`{location: "abfss://Sales_WS@onelake.dfs.fabric.microsoft.com/lh.Lakehouse/Tables/orders", storage: {azure: {credentials: {workloadIdentity: {serviceAccountName: fabric-writer}}}}}`},
	{"gcs with a service-account key", "DeltaTable", `{location: "gs://my-lake.example/t", storage: {gcs: ` + gcsKey + `}}`},
	{"gcs with workload identity", "DeltaTable",
		`{location: "gs://lake/t", storage: {gcs: {credentials: {workloadIdentity: {serviceAccountName: lake-reader}}}}}`},
	{"gcs emulator", "DeltaTable", `{location: "gs://lake/t", storage: {gcs: {emulatorHost: "http://10.77.0.1:4443"}}}`},
	{"ingest from azure into a checkpoint on gcs", "StreamIngest",
		`{target: t, source: {files: {location: "abfss://in@acct.dfs.core.windows.net/events", format: json}}, checkpointLocation: "gs://lake/cp"}`},
}

func TestAPIServer_RejectsCloudStorageMistakesWithActionableMessages(t *testing.T) {
	ns := newNamespace(t)
	for _, tc := range invalidCloudManifests {
		t.Run(tc.name, func(t *testing.T) {
			err := k8sClient.Create(context.Background(), manifest(t, tc.kind, "invalid", ns, tc.spec))
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

func TestAPIServer_AcceptsEveryCloudLocationForm(t *testing.T) {
	ns := newNamespace(t)
	for i, tc := range validCloudManifests {
		t.Run(tc.name, func(t *testing.T) {
			name := "valid-" + strings.Repeat("x", i+1)
			if err := k8sClient.Create(context.Background(), manifest(t, tc.kind, name, ns, tc.spec)); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}
