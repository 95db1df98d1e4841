package envtest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// TestDeltaTable_CloudJobsReferenceSecretsAndNeverCarryThem creates Secrets with known values next to an
// Azure and a GCS table and checks that the inspect Jobs the manager writes (admitted by the API server, so
// valid pod specs) name the Secrets' keys and that no byte of a secret value appears in them.
func TestDeltaTable_CloudJobsReferenceSecretsAndNeverCarryThem(t *testing.T) {
	ctx, ns, _ := controllerTest(t)
	const azureSecretValue, gcsSecretValue = "azure-key-value-that-must-stay-in-the-secret", "gcs-key-value-that-must-stay-in-the-secret"
	for name, data := range map[string]map[string]string{
		"lake-key": {"AZURE_STORAGE_KEY": azureSecretValue},
		"gcs-key":  {"key.json": `{"type":"service_account","private_key":"` + gcsSecretValue + `"}`},
	} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
		if err := k8sClient.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	tables := []*deltav1.DeltaTable{
		{ObjectMeta: metav1.ObjectMeta{Name: "adls", Namespace: ns}, Spec: deltav1.DeltaTableSpec{
			Location: "abfss://lake@devstoreaccount1.dfs.core.windows.net/sales/adls",
			Storage: &deltav1.StorageSpec{Azure: &deltav1.AzureStorage{Endpoint: "http://10.77.0.1:10000/devstoreaccount1",
				Credentials: deltav1.AzureCredentials{AccountKeySecretRef: &deltav1.SecretKeyRef{Name: "lake-key"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "onelake", Namespace: ns}, Spec: deltav1.DeltaTableSpec{
			Location: "abfss://sales@onelake.dfs.fabric.microsoft.com/lh.Lakehouse/Tables/orders",
			Storage: &deltav1.StorageSpec{Azure: &deltav1.AzureStorage{
				Credentials: deltav1.AzureCredentials{WorkloadIdentity: &deltav1.WorkloadIdentity{ServiceAccountName: "fabric-writer"}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gcs", Namespace: ns}, Spec: deltav1.DeltaTableSpec{
			Location: "gs://lake/sales/gcs",
			Storage: &deltav1.StorageSpec{GCS: &deltav1.GCSStorage{Credentials: &deltav1.GCSCredentials{
				ServiceAccountKeySecretRef: &deltav1.SecretKeyRef{Name: "gcs-key"}}}}}},
	}
	for _, table := range tables {
		if err := k8sClient.Create(ctx, table); err != nil {
			t.Fatal(err)
		}
	}

	jobs := map[string]*batchv1.Job{}
	for _, table := range tables {
		job := waitLiveJob(t, ns, table.Name, "inspect")
		jobs[table.Name] = job
		raw, err := json.Marshal(job)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), azureSecretValue) || strings.Contains(string(raw), gcsSecretValue) {
			t.Errorf("Job %s carries a secret value", job.Name)
		}
	}

	adls := jobs["adls"].Spec.Template.Spec
	ref := envSource(adls.Containers[0], "AZURE_STORAGE_KEY")
	if ref == nil || ref.SecretKeyRef == nil || ref.SecretKeyRef.Name != "lake-key" || ref.SecretKeyRef.Key != "AZURE_STORAGE_KEY" {
		t.Errorf("adls: AZURE_STORAGE_KEY comes from %+v, want Secret lake-key key AZURE_STORAGE_KEY", ref)
	}
	if ep := envSource(adls.Containers[0], "DELTAKEEPER_AZURE_BLOB_ENDPOINT"); ep != nil {
		t.Errorf("adls: the endpoint is a setting, not a reference: %+v", ep)
	}

	onelake := jobs["onelake"].Spec.Template
	if onelake.Spec.ServiceAccountName != "fabric-writer" || onelake.Labels["azure.workload.identity/use"] != "true" {
		t.Errorf("onelake: ServiceAccount %q labels %v, want fabric-writer and azure.workload.identity/use=true",
			onelake.Spec.ServiceAccountName, onelake.Labels)
	}

	gcs := jobs["gcs"].Spec.Template.Spec
	var keyVolume *corev1.SecretVolumeSource
	for _, v := range gcs.Volumes {
		if v.Secret != nil {
			keyVolume = v.Secret
		}
	}
	if keyVolume == nil || keyVolume.SecretName != "gcs-key" || keyVolume.Items[0].Key != "key.json" {
		t.Errorf("gcs: key volume %+v, want Secret gcs-key's key.json", keyVolume)
	}
	if got := envValueOf(gcs.Containers[0], "GOOGLE_APPLICATION_CREDENTIALS"); got != "/etc/deltakeeper/gcs/key.json" {
		t.Errorf("gcs: GOOGLE_APPLICATION_CREDENTIALS = %q", got)
	}
}

// TestManagerRole_GrantsNothingOnSecrets reads the generated ClusterRole: the manager references Secrets
// in the Jobs it writes and must not be able to read them.
func TestManagerRole_GrantsNothingOnSecrets(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role struct {
		Rules []struct {
			Resources []string `json:"resources"`
		} `json:"rules"`
	}
	if err := yaml.Unmarshal(data, &role); err != nil {
		t.Fatal(err)
	}
	if len(role.Rules) == 0 {
		t.Fatal("config/rbac/role.yaml has no rules")
	}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			if res == "secrets" || res == "*" {
				t.Errorf("the manager's ClusterRole grants %q", res)
			}
		}
	}
}

func envSource(c corev1.Container, name string) *corev1.EnvVarSource {
	for _, e := range c.Env {
		if e.Name == name {
			return e.ValueFrom
		}
	}
	return nil
}

func envValueOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
