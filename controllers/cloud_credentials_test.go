package controllers

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func cloudTable(location string, storage *deltav1.StorageSpec) *deltav1.DeltaTable {
	return &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "lake", UID: types.UID("uid-orders"), Generation: 1},
		Spec:       deltav1.DeltaTableSpec{Location: location, Storage: storage},
	}
}

func azureTable(location string, az deltav1.AzureStorage) *deltav1.DeltaTable {
	return cloudTable(location, &deltav1.StorageSpec{Azure: &az})
}

func gcsTable(gcs deltav1.GCSStorage) *deltav1.DeltaTable {
	return cloudTable("gs://lake/sales/orders", &deltav1.StorageSpec{GCS: &gcs})
}

// secretRefs maps each Secret-backed variable to "secret/key".
func secretRefs(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			out[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
	}
	return out
}

func TestBuildJob_WiresAzureAndGCSCredentialsAsReferences(t *testing.T) {
	const abfss = "abfss://lake@acct.dfs.core.windows.net/sales/orders"
	tests := []struct {
		name          string
		table         *deltav1.DeltaTable
		wantSA        string
		wantAutomount bool
		wantSecretEnv map[string]string
		wantEnv       map[string]string
		wantLabel     bool
		wantKeyFile   string // the Secret key mounted as the GCS key file, "" for none
	}{
		{
			name: "azure account key from a Secret, endpoint and account as values",
			table: azureTable("az://lake/t", deltav1.AzureStorage{Account: "devstoreaccount1", Endpoint: "http://10.77.0.1:10000/devstoreaccount1",
				Credentials: deltav1.AzureCredentials{AccountKeySecretRef: &deltav1.SecretKeyRef{Name: "lake-key"}}}),
			wantSecretEnv: map[string]string{"AZURE_STORAGE_KEY": "lake-key/AZURE_STORAGE_KEY"},
			wantEnv: map[string]string{"AZURE_STORAGE_ACCOUNT": "devstoreaccount1",
				"DELTAKEEPER_AZURE_BLOB_ENDPOINT": "http://10.77.0.1:10000/devstoreaccount1"},
		},
		{
			name: "azure SAS token under the Secret key the user names",
			table: azureTable(abfss, deltav1.AzureStorage{
				Credentials: deltav1.AzureCredentials{SASTokenSecretRef: &deltav1.SecretKeyRef{Name: "lake-sas", Key: "token"}}}),
			wantSecretEnv: map[string]string{"AZURE_STORAGE_SAS_TOKEN": "lake-sas/token"},
		},
		{
			name: "azure workload identity: the ServiceAccount, its token and the webhook's label",
			table: azureTable(abfss, deltav1.AzureStorage{
				Credentials: deltav1.AzureCredentials{WorkloadIdentity: &deltav1.WorkloadIdentity{ServiceAccountName: "lake-writer"}}}),
			wantSA: "lake-writer", wantAutomount: true, wantLabel: true,
		},
		{
			name: "gcs service-account key mounted as a read-only file",
			table: gcsTable(deltav1.GCSStorage{Credentials: &deltav1.GCSCredentials{
				ServiceAccountKeySecretRef: &deltav1.SecretKeyRef{Name: "gcs-key"}}}),
			wantEnv:     map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/etc/deltakeeper/gcs/key.json"},
			wantKeyFile: "gcs-key/key.json",
		},
		{
			name: "gcs key under another Secret key",
			table: gcsTable(deltav1.GCSStorage{Credentials: &deltav1.GCSCredentials{
				ServiceAccountKeySecretRef: &deltav1.SecretKeyRef{Name: "gcs-key", Key: "sa.json"}}}),
			wantEnv:     map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/etc/deltakeeper/gcs/key.json"},
			wantKeyFile: "gcs-key/sa.json",
		},
		{
			name: "gcs workload identity needs only the ServiceAccount",
			table: gcsTable(deltav1.GCSStorage{Credentials: &deltav1.GCSCredentials{
				WorkloadIdentity: &deltav1.WorkloadIdentity{ServiceAccountName: "lake-reader"}}}),
			wantSA: "lake-reader", wantAutomount: true,
		},
		{
			name:    "gcs emulator: its address, no credentials",
			table:   gcsTable(deltav1.GCSStorage{EmulatorHost: "10.77.0.1:4443"}),
			wantEnv: map[string]string{"STORAGE_EMULATOR_HOST": "10.77.0.1:4443"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			job := BuildJob(inspectRequest(t, tc.table))
			pod := job.Spec.Template.Spec
			c := pod.Containers[0]
			if pod.ServiceAccountName != tc.wantSA || *pod.AutomountServiceAccountToken != tc.wantAutomount {
				t.Errorf("serviceAccount %q automount %v, want %q %v", pod.ServiceAccountName, *pod.AutomountServiceAccountToken, tc.wantSA, tc.wantAutomount)
			}
			if got := secretRefs(c); !maps.Equal(got, tc.wantSecretEnv) {
				t.Errorf("secret env = %v, want %v", got, tc.wantSecretEnv)
			}
			for k, v := range tc.wantEnv {
				if got := envValue(c, k); got != v {
					t.Errorf("env %s = %q, want %q", k, got, v)
				}
			}
			for _, e := range c.Env {
				if slices.Contains([]string{"AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN"}, e.Name) && e.Value != "" {
					t.Errorf("env %s carries a literal value", e.Name)
				}
			}
			if got := job.Spec.Template.Labels[labelAzureWorkloadIdentity] == "true"; got != tc.wantLabel {
				t.Errorf("pod label %s present = %v, want %v", labelAzureWorkloadIdentity, got, tc.wantLabel)
			}
			var keyFile string
			for _, v := range pod.Volumes {
				if v.Secret != nil {
					if len(v.Secret.Items) != 1 || v.Secret.Items[0].Path != "key.json" {
						t.Errorf("secret volume %s maps %+v, want one key as key.json", v.Name, v.Secret.Items)
					}
					keyFile = v.Secret.SecretName + "/" + v.Secret.Items[0].Key
				}
			}
			if keyFile != tc.wantKeyFile {
				t.Errorf("mounted key %q, want %q", keyFile, tc.wantKeyFile)
			}
			for _, m := range c.VolumeMounts {
				if m.Name == gcsKeyVolume && (!m.ReadOnly || m.MountPath != "/etc/deltakeeper/gcs") {
					t.Errorf("GCS key mount %+v, want read-only at /etc/deltakeeper/gcs", m)
				}
			}
		})
	}
}

func TestBuildJob_AzureWorkloadIdentityLabelSurvivesTemplateLabels(t *testing.T) {
	table := azureTable("abfss://lake@acct.dfs.core.windows.net/t", deltav1.AzureStorage{
		Credentials: deltav1.AzureCredentials{WorkloadIdentity: &deltav1.WorkloadIdentity{ServiceAccountName: "lake-writer"}}})
	table.Spec.JobTemplate = &deltav1.JobTemplate{PodLabels: map[string]string{labelAzureWorkloadIdentity: "false", "team": "sales"},
		ServiceAccountName: "maintenance"}
	job := BuildJob(inspectRequest(t, table))
	labels := job.Spec.Template.Labels
	if labels[labelAzureWorkloadIdentity] != "true" || labels["team"] != "sales" {
		t.Errorf("pod labels %v: want %s=true and the template's team label", labels, labelAzureWorkloadIdentity)
	}
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "maintenance" {
		t.Errorf("ServiceAccount %q: the template's override must win", sa)
	}
}
