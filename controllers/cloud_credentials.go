package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// How Azure and GCS credentials reach the worker. As for S3, the manager only writes references: the kubelet
// resolves Secret keys into environment variables or files when it starts the pod, so no credential passes
// through the manager (whose ClusterRole cannot read Secrets). The variable names are the ones
// worker/storage.ConfigFromEnv reads (the SDKs' standard names where they have one).
const (
	envAzureAccount  = "AZURE_STORAGE_ACCOUNT"
	envAzureKey      = "AZURE_STORAGE_KEY"
	envAzureSASToken = "AZURE_STORAGE_SAS_TOKEN"
	envAzureEndpoint = "DELTAKEEPER_AZURE_BLOB_ENDPOINT"
	envGCSEmulator   = "STORAGE_EMULATOR_HOST"
	envGCSKeyFile    = "GOOGLE_APPLICATION_CREDENTIALS"

	gcsKeyVolume   = "gcs-key"
	gcsKeyMountDir = "/etc/deltakeeper/gcs"
	gcsKeyFileName = "key.json"

	// labelAzureWorkloadIdentity makes AKS's workload identity webhook inject the federated token and
	// AZURE_CLIENT_ID / AZURE_TENANT_ID / AZURE_FEDERATED_TOKEN_FILE, which azidentity's default credential
	// reads.
	labelAzureWorkloadIdentity = "azure.workload.identity/use"
)

// The Secret keys used when a SecretKeyRef names none.
const (
	defaultAzureKeyKey       = envAzureKey
	defaultAzureSASKey       = envAzureSASToken
	defaultGCSKeyKey         = gcsKeyFileName
	gcsKeyFileMode     int32 = 0o444 // the pod runs as a non-root uid without fsGroup; the volume is the pod's own
)

// cloudEnv is the worker environment for an Azure or GCS table: endpoint and account settings as values,
// credentials as Secret references.
func cloudEnv(table *deltav1.DeltaTable) []corev1.EnvVar {
	var env []corev1.EnvVar
	if az := table.Azure(); az != nil {
		if az.Account != "" {
			env = append(env, corev1.EnvVar{Name: envAzureAccount, Value: az.Account})
		}
		if az.Endpoint != "" {
			env = append(env, corev1.EnvVar{Name: envAzureEndpoint, Value: az.Endpoint})
		}
		if ref := az.Credentials.AccountKeySecretRef; ref != nil {
			env = append(env, secretKeyEnv(envAzureKey, ref, defaultAzureKeyKey))
		}
		if ref := az.Credentials.SASTokenSecretRef; ref != nil {
			env = append(env, secretKeyEnv(envAzureSASToken, ref, defaultAzureSASKey))
		}
	}
	if gcs := table.GCS(); gcs != nil {
		if gcs.EmulatorHost != "" {
			env = append(env, corev1.EnvVar{Name: envGCSEmulator, Value: gcs.EmulatorHost})
		}
		if gcsKeyRef(table) != nil {
			env = append(env, corev1.EnvVar{Name: envGCSKeyFile, Value: gcsKeyMountDir + "/" + gcsKeyFileName})
		}
	}
	return env
}

func secretKeyEnv(name string, ref *deltav1.SecretKeyRef, defaultKey string) corev1.EnvVar {
	key := ref.Key
	if key == "" {
		key = defaultKey
	}
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: key,
	}}}
}

// cloudVolumes mounts a GCS service-account key read-only: Google's libraries take a key as a file
// (GOOGLE_APPLICATION_CREDENTIALS), not as a variable.
func cloudVolumes(table *deltav1.DeltaTable) ([]corev1.Volume, []corev1.VolumeMount) {
	ref := gcsKeyRef(table)
	if ref == nil {
		return nil, nil
	}
	key := ref.Key
	if key == "" {
		key = defaultGCSKeyKey
	}
	volume := corev1.Volume{Name: gcsKeyVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  ref.Name,
		Items:       []corev1.KeyToPath{{Key: key, Path: gcsKeyFileName}},
		DefaultMode: ptr.To(gcsKeyFileMode),
	}}}
	mount := corev1.VolumeMount{Name: gcsKeyVolume, MountPath: gcsKeyMountDir, ReadOnly: true}
	return []corev1.Volume{volume}, []corev1.VolumeMount{mount}
}

func gcsKeyRef(table *deltav1.DeltaTable) *deltav1.SecretKeyRef {
	if gcs := table.GCS(); gcs != nil && gcs.Credentials != nil {
		return gcs.Credentials.ServiceAccountKeySecretRef
	}
	return nil
}

// identityServiceAccount is the ServiceAccount whose cloud identity the worker uses, if the table's
// credentials name one (S3's serviceAccountName, Azure's or GCS's workloadIdentity), and whether the
// credentials are static keys instead.
func identityServiceAccount(table *deltav1.DeltaTable) (sa string, staticKeys bool) {
	if s3 := table.S3(); s3 != nil && s3.Credentials != nil {
		return s3.Credentials.ServiceAccountName, s3.Credentials.SecretRef != nil
	}
	if az := table.Azure(); az != nil {
		if wi := az.Credentials.WorkloadIdentity; wi != nil {
			return wi.ServiceAccountName, false
		}
		return "", true
	}
	if gcs := table.GCS(); gcs != nil && gcs.Credentials != nil {
		if wi := gcs.Credentials.WorkloadIdentity; wi != nil {
			return wi.ServiceAccountName, false
		}
		return "", gcs.Credentials.ServiceAccountKeySecretRef != nil
	}
	return "", false
}

// cloudPodLabels are the labels a cloud's workload identity needs on the pod. GKE needs none: its
// metadata server knows the pod's ServiceAccount.
func cloudPodLabels(table *deltav1.DeltaTable) map[string]string {
	if az := table.Azure(); az != nil && az.Credentials.WorkloadIdentity != nil {
		return map[string]string{labelAzureWorkloadIdentity: "true"}
	}
	return nil
}
