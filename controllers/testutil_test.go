package controllers

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// tableBuilder builds DeltaTables for tests: s3Table("orders").withSecret("keys").obj().
type tableBuilder struct{ t *deltav1.DeltaTable }

func s3Table(name string) *tableBuilder {
	return &tableBuilder{t: &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lake", UID: types.UID("uid-" + name), Generation: 1},
		Spec:       deltav1.DeltaTableSpec{Location: "s3://lakehouse/sales/" + name},
	}}
}

func localTable(name string) *tableBuilder {
	return &tableBuilder{t: &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lake", UID: types.UID("uid-" + name), Generation: 1},
		Spec: deltav1.DeltaTableSpec{
			Location: "file:///data/tables/" + name,
			Storage:  &deltav1.StorageSpec{Local: &deltav1.LocalStorage{ClaimName: "lake-data", MountPath: "/data"}},
		},
	}}
}

func (b *tableBuilder) s3() *deltav1.S3Storage {
	if b.t.Spec.Storage == nil {
		b.t.Spec.Storage = &deltav1.StorageSpec{}
	}
	if b.t.Spec.Storage.S3 == nil {
		b.t.Spec.Storage.S3 = &deltav1.S3Storage{}
	}
	return b.t.Spec.Storage.S3
}

func (b *tableBuilder) withEndpoint(endpoint string) *tableBuilder {
	s := b.s3()
	s.Endpoint, s.Region, s.ForcePathStyle = endpoint, "us-east-1", true
	return b
}

func (b *tableBuilder) withSecret(name string) *tableBuilder {
	b.s3().Credentials = &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: name}}
	return b
}

func (b *tableBuilder) withServiceAccount(name string) *tableBuilder {
	b.s3().Credentials = &deltav1.S3Credentials{ServiceAccountName: name}
	return b
}

func (b *tableBuilder) withCA(configMap, key string) *tableBuilder {
	b.s3().CABundle = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key}
	return b
}

func (b *tableBuilder) withLabels(l map[string]string) *tableBuilder {
	b.t.Labels = l
	return b
}

func (b *tableBuilder) withProperties() *tableBuilder {
	tfs := resource.MustParse("256Mi")
	b.t.Spec.Properties = &deltav1.TableProperties{
		OptimizeWrite:        ptr.To(true),
		TargetFileSize:       &tfs,
		DeletedFileRetention: &metav1.Duration{Duration: 168 * time.Hour},
		CheckpointInterval:   ptr.To[int32](10),
		Extra:                map[string]string{"delta.enableDeletionVectors": "true", "delta.appendOnly": "false"},
	}
	return b
}

func (b *tableBuilder) clusterBy(cols ...string) *tableBuilder {
	b.t.Spec.ClusterBy = cols
	return b
}

func (b *tableBuilder) template(t *deltav1.JobTemplate) *tableBuilder {
	b.t.Spec.JobTemplate = t
	return b
}

// inspected gives the table an inspected status.
func (b *tableBuilder) inspected(small int64, quality ...deltav1.ColumnQuality) *tableBuilder {
	b.t.Status.LastInspectedTime = &metav1.Time{Time: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)}
	b.t.Status.NumFiles, b.t.Status.NumSmallFiles = 100, small
	b.t.Status.Clustering = quality
	return b
}

func (b *tableBuilder) obj() *deltav1.DeltaTable { return b.t }
