package v1

// AzureStorage says how the worker reaches an Azure location: Blob Storage or ADLS Gen2
// (abfss://container@account.dfs.core.windows.net/prefix, also abfs://, wasbs://, wasb://), OneLake
// (abfss://workspace@onelake.dfs.fabric.microsoft.com/item/…) or az://container/prefix with the account given
// here. The worker speaks the Blob API and commits with If-None-Match: *, so one commit has one winner.
type AzureStorage struct {
	// Account is the storage account of az:// locations: its name ("lake") or its host
	// ("lake.dfs.core.windows.net"). abfss:// and wasbs:// locations name their own account.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+(\.(dfs|blob)\.[a-z0-9.-]+)?$`
	Account string `json:"account,omitempty"`

	// Endpoint replaces the account's Blob service URL (https://<account>.blob.core.windows.net/), for
	// emulators such as Azurite (http://azurite.storage.svc:10000/devstoreaccount1) or a private endpoint.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#@]+(:[0-9]+)?(/[^\s?#@]*)?$`
	Endpoint string `json:"endpoint,omitempty"`

	// Credentials names exactly one credentials source. OneLake accepts only Entra ID tokens, so a
	// OneLake location needs workloadIdentity.
	Credentials AzureCredentials `json:"credentials"`
}

// AzureCredentials names exactly one credentials source. Secrets are mounted into the worker pods as
// environment variables by the kubelet; the operator never reads them.
// +kubebuilder:validation:XValidation:rule="[has(self.accountKeySecretRef), has(self.sasTokenSecretRef), has(self.workloadIdentity)].filter(x, x).size() == 1",message="set exactly one of storage.azure.credentials.accountKeySecretRef (a shared key), sasTokenSecretRef (a SAS token) or workloadIdentity (AKS workload identity through a ServiceAccount)"
type AzureCredentials struct {
	// AccountKeySecretRef is a Secret key holding a shared key of the storage account (default key
	// AZURE_STORAGE_KEY). It becomes the worker's AZURE_STORAGE_KEY.
	// +optional
	AccountKeySecretRef *SecretKeyRef `json:"accountKeySecretRef,omitempty"`

	// SASTokenSecretRef is a Secret key holding a shared access signature ("sv=…&sig=…", default key
	// AZURE_STORAGE_SAS_TOKEN) that grants read, write, delete and list on the container. It becomes the
	// worker's AZURE_STORAGE_SAS_TOKEN.
	// +optional
	SASTokenSecretRef *SecretKeyRef `json:"sasTokenSecretRef,omitempty"`

	// WorkloadIdentity runs the worker pods under a ServiceAccount federated with an Entra ID identity
	// (annotated azure.workload.identity/client-id) and labels them azure.workload.identity/use: "true",
	// so that AKS's webhook injects the token the worker exchanges.
	// +optional
	WorkloadIdentity *WorkloadIdentity `json:"workloadIdentity,omitempty"`
}

// GCSStorage says how the worker reaches a gs://bucket/prefix location. Commits use ifGenerationMatch=0,
// so one commit has one winner.
// +kubebuilder:validation:XValidation:rule="has(self.emulatorHost) != has(self.credentials)",message="storage.gcs needs exactly one of credentials (Google Cloud) or emulatorHost (an unauthenticated emulator such as fake-gcs-server)"
type GCSStorage struct {
	// EmulatorHost is the address of a GCS emulator ("fake-gcs.storage.svc:4443" or a URL), the Go SDK's
	// STORAGE_EMULATOR_HOST. Requests to it carry no credentials.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^(https?://)?[^\s/?#@]+(:[0-9]+)?/?$`
	EmulatorHost string `json:"emulatorHost,omitempty"`

	// Credentials names exactly one credentials source for Google Cloud.
	// +optional
	Credentials *GCSCredentials `json:"credentials,omitempty"`
}

// GCSCredentials names exactly one credentials source.
// +kubebuilder:validation:XValidation:rule="has(self.serviceAccountKeySecretRef) != has(self.workloadIdentity)",message="set exactly one of storage.gcs.credentials.serviceAccountKeySecretRef (a service-account key file) or workloadIdentity (GKE workload identity through a ServiceAccount)"
type GCSCredentials struct {
	// ServiceAccountKeySecretRef is a Secret key holding a Google service-account key, the JSON file
	// Google issues (default key key.json). The Secret is mounted read-only into the worker pods and
	// GOOGLE_APPLICATION_CREDENTIALS points at the file.
	// +optional
	ServiceAccountKeySecretRef *SecretKeyRef `json:"serviceAccountKeySecretRef,omitempty"`

	// WorkloadIdentity runs the worker pods under a ServiceAccount bound to a Google service account
	// (annotated iam.gke.io/gcp-service-account); GKE's metadata server gives the worker its tokens.
	// +optional
	WorkloadIdentity *WorkloadIdentity `json:"workloadIdentity,omitempty"`
}

// SecretKeyRef is one key of a Secret in the table's namespace.
type SecretKeyRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// Key within the Secret (the default depends on the field: AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN,
	// key.json).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// WorkloadIdentity is a cloud identity federated with a Kubernetes ServiceAccount.
type WorkloadIdentity struct {
	// ServiceAccountName is the ServiceAccount in the table's namespace that the worker pods run under.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ServiceAccountName string `json:"serviceAccountName"`
}
