package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeltaTableSpec says where a Delta table lives, how to reach it and what it should look like.
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.s3) || self.location.startsWith('s3://')",message="storage.s3 applies only to s3:// locations; remove it or use an s3:// location"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.local) || self.location.startsWith('file:///')",message="storage.local applies only to file:// locations; remove it or use a file:// location"
// +kubebuilder:validation:XValidation:rule="!self.location.startsWith('file:///') || (has(self.storage) && has(self.storage.local))",message="a file:// location needs storage.local.claimName: the worker pod reads the table from that PersistentVolumeClaim"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.local) || self.location.startsWith('file://' + self.storage.local.mountPath + '/')",message="a file:// location must lie under storage.local.mountPath (default /data), e.g. file:///data/tables/orders"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.azure) || self.location.matches('^(abfss|abfs|wasbs|wasb|az|azure)://')",message="storage.azure applies only to Azure locations (abfss://, abfs://, wasbs://, wasb://, az://); remove it or use an Azure location"
// +kubebuilder:validation:XValidation:rule="!self.location.matches('^(abfss|abfs|wasbs|wasb|az|azure)://') || (has(self.storage) && has(self.storage.azure))",message="an Azure location needs storage.azure.credentials: one of accountKeySecretRef, sasTokenSecretRef or workloadIdentity"
// +kubebuilder:validation:XValidation:rule="!self.location.matches('^(az|azure)://') || !has(self.storage) || !has(self.storage.azure) || has(self.storage.azure.account)",message="an az:// location names no storage account: set storage.azure.account or write abfss://<container>@<account>.dfs.core.windows.net/<prefix>"
// +kubebuilder:validation:XValidation:rule="!self.location.matches('^abfss?://[^/]*@onelake[.]') || !has(self.storage) || !has(self.storage.azure) || has(self.storage.azure.credentials.workloadIdentity)",message="OneLake accepts only Entra ID tokens: use storage.azure.credentials.workloadIdentity, not an account key or SAS"
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.gcs) || self.location.startsWith('gs://')",message="storage.gcs applies only to gs:// locations; remove it or use a gs:// location"
// +kubebuilder:validation:XValidation:rule="!self.location.startsWith('gs://') || (has(self.storage) && has(self.storage.gcs))",message="a gs:// location needs storage.gcs: credentials (serviceAccountKeySecretRef or workloadIdentity) or emulatorHost"
type DeltaTableSpec struct {
	// Location of the table root: s3://bucket/prefix, an Azure location
	// (abfss://container@account.dfs.core.windows.net/prefix, also abfs://, wasbs://, wasb://, OneLake's
	// abfss://workspace@onelake.dfs.fabric.microsoft.com/item/…, or az://container/prefix with
	// storage.azure.account), gs://bucket/prefix, or file:///absolute/path.
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$') || self.matches('^(abfss|abfs|wasbs|wasb)://[A-Za-z0-9._-]+@[A-Za-z0-9-]+([.](dfs|blob)[.][A-Za-z0-9.-]+)?(/.*)?$') || self.matches('^(az|azure)://[A-Za-z0-9._-]+(/.*)?$') || self.matches('^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.*)?$') || self.matches('^file:///.+$')",message="location must be s3://<bucket>[/prefix], abfss://<container>@<account>.dfs.core.windows.net[/prefix] (or abfs://, wasbs://, wasb://, az://<container>[/prefix]), gs://<bucket>[/prefix] with a valid bucket or container name, or file:///<absolute path>"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="location is immutable: create a new DeltaTable to manage another table"
	Location string `json:"location"`

	// Storage says how the worker reaches the location.
	// +optional
	Storage *StorageSpec `json:"storage,omitempty"`

	// Properties are table properties that deltakeeper commits to the table when they differ from it.
	// +optional
	Properties *TableProperties `json:"properties,omitempty"`

	// ClusterBy lists 1 to 4 liquid-clustering columns. When set, deltakeeper commits the clustering
	// definition if the table's differs and the next optimize reclusters incrementally. When empty, deltakeeper
	// leaves the table's clustering definition as it is (use `deltakeeper alter --cluster-by none` to remove it).
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.lowerAscii() == c.lowerAscii()))",message="clusterBy columns must be distinct ignoring case (Delta column names are case-insensitive)"
	// +listType=atomic
	ClusterBy []string `json:"clusterBy,omitempty"`

	// InspectInterval is how often an inspect Job refreshes the status (and re-applies properties).
	// +optional
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",messageExpression=`'inspectInterval "' + self + '" is not a duration: use 24h, 168h, 720h (units h, m, s; there is no d)'`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self) >= duration('1m')",message="inspectInterval must be at least 1m"
	InspectInterval *metav1.Duration `json:"inspectInterval,omitempty"`

	// JobTemplate customises the pods of this table's inspect Jobs.
	// +optional
	JobTemplate *JobTemplate `json:"jobTemplate,omitempty"`
}

// StorageSpec configures access to the table's storage. The reconciler never reads credentials: it only
// references them in the worker Jobs it creates.
// +kubebuilder:validation:XValidation:rule="[has(self.s3), has(self.local), has(self.azure), has(self.gcs)].filter(x, x).size() == 1",message="storage names exactly one of s3, local, azure or gcs: the one matching the location's scheme"
type StorageSpec struct {
	// S3 settings for s3:// locations (AWS or any S3-compatible store).
	// +optional
	S3 *S3Storage `json:"s3,omitempty"`

	// Local mounts a PersistentVolumeClaim for file:// locations.
	// +optional
	Local *LocalStorage `json:"local,omitempty"`

	// Azure settings for Azure locations (Blob Storage, ADLS Gen2, OneLake).
	// +optional
	Azure *AzureStorage `json:"azure,omitempty"`

	// GCS settings for gs:// locations.
	// +optional
	GCS *GCSStorage `json:"gcs,omitempty"`
}

// S3Storage holds the endpoint and credentials for an s3:// location.
type S3Storage struct {
	// Endpoint of an S3-compatible service, e.g. https://minio.storage.svc:9000 (default: AWS).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+(:[0-9]+)?/?$`
	Endpoint string `json:"endpoint,omitempty"`

	// Region of the bucket.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]+$`
	Region string `json:"region,omitempty"`

	// ForcePathStyle addresses the bucket in the path rather than the host name (most S3-compatible stores).
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`

	// CABundle references a ConfigMap key holding PEM CA certificates to trust for the endpoint.
	// +optional
	CABundle *corev1.ConfigMapKeySelector `json:"caBundle,omitempty"`

	// Credentials to use. Without it the worker uses the pod's ambient identity through the AWS default
	// credential chain with the namespace's default ServiceAccount.
	// +optional
	Credentials *S3Credentials `json:"credentials,omitempty"`
}

// S3Credentials names exactly one credentials source.
// +kubebuilder:validation:XValidation:rule="has(self.secretRef) != has(self.serviceAccountName)",message="set exactly one of credentials.secretRef (static keys) or credentials.serviceAccountName (ambient identity such as IRSA or EKS Pod Identity)"
type S3Credentials struct {
	// SecretRef references a Secret in the table's namespace holding static keys. It is mounted into the
	// worker pods as environment variables; the operator never reads it.
	// +optional
	SecretRef *S3SecretRef `json:"secretRef,omitempty"`

	// ServiceAccountName runs the worker pods under this ServiceAccount so that its ambient identity (IRSA
	// web identity, EKS Pod Identity) grants access.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
}

// S3SecretRef points at the keys of a Secret.
type S3SecretRef struct {
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`

	// AccessKeyIDKey is the Secret key of the access key id.
	// +optional
	// +kubebuilder:default=AWS_ACCESS_KEY_ID
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	AccessKeyIDKey string `json:"accessKeyIDKey,omitempty"`

	// SecretAccessKeyKey is the Secret key of the secret access key.
	// +optional
	// +kubebuilder:default=AWS_SECRET_ACCESS_KEY
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	SecretAccessKeyKey string `json:"secretAccessKeyKey,omitempty"`

	// SessionTokenKey is the Secret key of an optional session token.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	SessionTokenKey string `json:"sessionTokenKey,omitempty"`
}

// LocalStorage mounts a PersistentVolumeClaim that holds file:// tables.
type LocalStorage struct {
	// ClaimName of the PersistentVolumeClaim in the table's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ClaimName string `json:"claimName"`

	// MountPath is where the claim is mounted in the worker pod; the location must lie under it.
	// +optional
	// +kubebuilder:default=/data
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^/[A-Za-z0-9._/-]*[A-Za-z0-9._-]$`
	MountPath string `json:"mountPath,omitempty"`
}

// TableProperties are the declared Delta table properties. Each typed field maps to one delta.* property;
// Extra carries any other delta.* property verbatim.
// +kubebuilder:validation:XValidation:rule="!has(self.extra) || !self.extra.exists(k, k in ['delta.autoOptimize.optimizeWrite', 'delta.autoOptimize.autoCompact', 'delta.targetFileSize', 'delta.deletedFileRetentionDuration', 'delta.logRetentionDuration', 'delta.checkpointInterval', 'delta.dataSkippingNumIndexedCols'])",message="properties.extra must not repeat a typed property (optimizeWrite, autoCompact, targetFileSize, deletedFileRetention, logRetention, checkpointInterval, dataSkippingNumIndexedCols): set the typed field instead"
type TableProperties struct {
	// OptimizeWrite sets delta.autoOptimize.optimizeWrite: writers shuffle data into fewer, larger files.
	// +optional
	OptimizeWrite *bool `json:"optimizeWrite,omitempty"`

	// AutoCompact sets delta.autoOptimize.autoCompact: writers compact small files after each commit.
	// +optional
	AutoCompact *bool `json:"autoCompact,omitempty"`

	// TargetFileSize sets delta.targetFileSize, the size that compaction and clustering aim for.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",messageExpression=`'targetFileSize "' + string(self) + '" is not a size: use 256Mi or 1Gi (Ki, Mi, Gi, Ti; no space, no B)'`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('16Gi')) <= 0)",message="targetFileSize must be between 1Mi and 16Gi"
	TargetFileSize *resource.Quantity `json:"targetFileSize,omitempty"`

	// DeletedFileRetention sets delta.deletedFileRetentionDuration: how long removed files stay for time
	// travel and concurrent readers before VACUUM may delete them.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",messageExpression=`'deletedFileRetention "' + self + '" is not a duration: use 24h, 168h, 720h (units h, m, s; there is no d)'`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self) >= duration('1h')",message="deletedFileRetention must be at least 1h"
	DeletedFileRetention *metav1.Duration `json:"deletedFileRetention,omitempty"`

	// LogRetention sets delta.logRetentionDuration: how long log history is kept.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",messageExpression=`'logRetention "' + self + '" is not a duration: use 24h, 168h, 720h (units h, m, s; there is no d)'`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self) >= duration('1h')",message="logRetention must be at least 1h"
	LogRetention *metav1.Duration `json:"logRetention,omitempty"`

	// CheckpointInterval sets delta.checkpointInterval: commits between checkpoints.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	CheckpointInterval *int32 `json:"checkpointInterval,omitempty"`

	// DataSkippingNumIndexedCols sets delta.dataSkippingNumIndexedCols: how many leading columns get file
	// statistics (-1 for all). Clustering columns must be among them.
	// +optional
	// +kubebuilder:validation:Minimum=-1
	// +kubebuilder:validation:Maximum=1000
	DataSkippingNumIndexedCols *int32 `json:"dataSkippingNumIndexedCols,omitempty"`

	// Extra holds other delta.* properties, verbatim.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.startsWith('delta.') && k.size() <= 128)",message="properties.extra keys must start with 'delta.' and be at most 128 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].size() <= 1024)",message="properties.extra values must be at most 1024 characters"
	Extra map[string]string `json:"extra,omitempty"`
}

// DeltaTableStatus is what the table is, as the last inspect Job saw it, and how maintenance went.
type DeltaTableStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reachable, PropertiesApplied, MaintenanceSucceeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Version is the table's latest version.
	// +optional
	Version *int64 `json:"version,omitempty"`

	// NumFiles is the number of live data files.
	// +optional
	NumFiles int64 `json:"numFiles,omitempty"`

	// SizeBytes is the total size of the live data files.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`

	// Size is SizeBytes for people (e.g. 12.3GiB).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Size string `json:"size,omitempty"`

	// NumSmallFiles counts live files smaller than half the target file size.
	// +optional
	NumSmallFiles int64 `json:"numSmallFiles,omitempty"`

	// UnclusteredBytes is the size of live files not yet clustered by the current clustering columns.
	// +optional
	UnclusteredBytes int64 `json:"unclusteredBytes,omitempty"`

	// PartitionColumns of the table.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	PartitionColumns []string `json:"partitionColumns,omitempty"`

	// ClusteringColumns of the table as its log defines them.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	ClusteringColumns []string `json:"clusteringColumns,omitempty"`

	// Protocol versions and features of the table.
	// +optional
	Protocol *ProtocolStatus `json:"protocol,omitempty"`

	// Clustering quality per clustering column.
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	Clustering []ColumnQuality `json:"clustering,omitempty"`

	// LastInspectedTime is when an inspect Job last reported.
	// +optional
	LastInspectedTime *metav1.Time `json:"lastInspectedTime,omitempty"`

	// Streams are the StreamIngests (same namespace) that write to this table.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=atomic
	Streams []string `json:"streams,omitempty"`

	// NextInspectTime is when the next periodic inspection is due. Each table has its own phase of the
	// inspect interval (from its UID), so tables created together do not inspect together.
	// +optional
	NextInspectTime *metav1.Time `json:"nextInspectTime,omitempty"`

	// Queue is where the object's next worker Job waits for admission, while it waits.
	// +optional
	Queue *QueueStatus `json:"queue,omitempty"`

	// ActiveJob is the maintenance Job currently holding this table's lock, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ActiveJob string `json:"activeJob,omitempty"`

	// RecentRuns are the latest runs on this table from any source, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	RecentRuns []RunRecord `json:"recentRuns,omitempty"`

	// FailedInspections counts consecutive failed inspect runs; it drives the back-off.
	// +optional
	FailedInspections int32 `json:"failedInspections,omitempty"`
}

// DeltaTable declares a Delta Lake table that deltakeeper inspects and maintains.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=dt;dtable,categories=deltakeeper
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.version`
// +kubebuilder:printcolumn:name="Files",type=integer,JSONPath=`.status.numFiles`
// +kubebuilder:printcolumn:name="Small",type=integer,JSONPath=`.status.numSmallFiles`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Last Run",type=string,JSONPath=`.status.recentRuns[0].result`
// +kubebuilder:printcolumn:name="Inspected",type=date,JSONPath=`.status.lastInspectedTime`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.spec.location`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DeltaTable struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec DeltaTableSpec `json:"spec"`

	// Status is written by the controller. A new object starts with observedGeneration 0, so that GitOps
	// tools (kstatus) read it as in progress until the first reconcile.
	// +kubebuilder:default={observedGeneration: 0}
	Status DeltaTableStatus `json:"status,omitempty"`
}

// DeltaTableList is a list of DeltaTables.
// +kubebuilder:object:root=true
type DeltaTableList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DeltaTable `json:"items"`
}

func init() {
	register(&DeltaTable{}, &DeltaTableList{})
}
