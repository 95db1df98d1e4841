package envtest

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestAPIServer_AppliesDefaultsThatMatchTheGoConstants(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)

	policy := &deltav1.OptimizePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns},
		Spec:       deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"t"}}},
	}
	if err := k8sClient.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	s := policy.Spec
	checks := []struct {
		name      string
		got, want any
	}{
		{"timeZone", s.TimeZone, "UTC"},
		{"concurrencyPolicy", s.ConcurrencyPolicy, deltav1.ConcurrencyForbid},
		{"triggers.minSmallFiles", deref(s.Triggers.MinSmallFiles), deltav1.DefaultMinSmallFiles},
		{"compaction.enabled", deref(s.Compaction.Enabled), true},
		{"compaction.maxDeletedRowsRatio", deref(s.Compaction.MaxDeletedRowsRatio), deltav1.DefaultMaxDeletedRowsRatio},
		{"clustering.enabled", deref(s.Clustering.Enabled), true},
		{"clustering.mode", s.Clustering.Mode, deltav1.ClusteringIncremental},
		{"autoRecluster.enabled", deref(s.Clustering.AutoRecluster.Enabled), true},
		{"autoRecluster.minOffendingFiles", deref(s.Clustering.AutoRecluster.MinOffendingFiles), deltav1.DefaultMinOffendingFiles},
		{"autoRecluster.minOverlapThreshold", deref(s.Clustering.AutoRecluster.MinOverlapThreshold), deltav1.DefaultMinOverlapThreshold},
		{"clustering.maxQualityGap", deref(s.Clustering.MaxQualityGap), deltav1.DefaultMaxQualityGap},
		{"checkpoint.enabled", deref(s.Checkpoint.Enabled), true},
		{"checkpoint.logCleanup", deref(s.Checkpoint.LogCleanup), true},
		{"successfulRunsHistoryLimit", deref(s.SuccessfulRunsHistoryLimit), deltav1.DefaultSuccessfulRunsHistoryLimit},
		{"failedRunsHistoryLimit", deref(s.FailedRunsHistoryLimit), deltav1.DefaultFailedRunsHistoryLimit},
		{"vacuum (off unless asked)", s.Vacuum == nil, true},
	}

	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: "s3://lake/t",
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{Credentials: &deltav1.S3Credentials{
				SecretRef: &deltav1.S3SecretRef{Name: "keys"}}}},
			JobTemplate: &deltav1.JobTemplate{},
		},
	}
	if err := k8sClient.Create(ctx, table); err != nil {
		t.Fatal(err)
	}
	ref := table.Spec.Storage.S3.Credentials.SecretRef
	checks = append(checks, []struct {
		name      string
		got, want any
	}{
		{"inspectInterval", table.Spec.InspectInterval.Duration, deltav1.DefaultInspectInterval},
		{"secretRef.accessKeyIDKey", ref.AccessKeyIDKey, "AWS_ACCESS_KEY_ID"},
		{"secretRef.secretAccessKeyKey", ref.SecretAccessKeyKey, "AWS_SECRET_ACCESS_KEY"},
		{"jobTemplate.backoffLimit", deref(table.Spec.JobTemplate.BackoffLimit), int32(1)},
	}...)

	ingest := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
		Spec: deltav1.StreamIngestSpec{
			Target: "t",
			Source: deltav1.IngestSource{DeltaTable: &deltav1.DeltaTableSource{Name: "src"}},
		},
	}
	if err := k8sClient.Create(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	checks = append(checks, []struct {
		name      string
		got, want any
	}{
		{"mode", ingest.Spec.Mode, deltav1.IngestAppend},
		{"maxFilesPerTrigger", deref(ingest.Spec.MaxFilesPerTrigger), deltav1.DefaultMaxFilesPerTrigger},
		{"trigger.interval", ingest.Spec.Trigger.Interval.Duration, deltav1.DefaultIngestInterval},
	}...)

	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestAPIServer_AcceptsSizesAsIntegersOrQuantities(t *testing.T) {
	ns := newNamespace(t)
	for i, size := range []string{"1073741824", "512Mi", "1Gi", "100M"} {
		obj := manifest(t, "DeltaTable", "t"+string(rune('a'+i)), ns,
			`{location: "s3://lake/t", properties: {targetFileSize: `+size+`}}`)
		if err := k8sClient.Create(context.Background(), obj); err != nil {
			t.Errorf("targetFileSize %s rejected: %v", size, err)
		}
	}
}

func TestAPIServer_KeepsIdentityFieldsImmutable(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns},
		Spec:       deltav1.DeltaTableSpec{Location: "s3://lake/a"},
	}
	if err := k8sClient.Create(ctx, table); err != nil {
		t.Fatal(err)
	}
	table.Spec.Location = "s3://lake/b"
	err := k8sClient.Update(ctx, table)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "location is immutable") {
		t.Errorf("changing the location: want 'location is immutable', got %v", err)
	}

	ingest := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
		Spec: deltav1.StreamIngestSpec{
			Target: "a", Source: deltav1.IngestSource{DeltaTable: &deltav1.DeltaTableSource{Name: "src"}},
		},
	}
	if err := k8sClient.Create(ctx, ingest); err != nil {
		t.Fatal(err)
	}
	ingest.Spec.Target = "b"
	err = k8sClient.Update(ctx, ingest)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "target is immutable") {
		t.Errorf("changing the target: want 'target is immutable', got %v", err)
	}

	files := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "f", Namespace: ns},
		Spec: deltav1.StreamIngestSpec{Target: "a", Source: deltav1.IngestSource{Files: &deltav1.FileSource{
			Location: "s3://drop/a/", Format: "csv", Options: map[string]string{"header": "true"}}}},
	}
	if err := k8sClient.Create(ctx, files); err != nil {
		t.Fatal(err)
	}
	changes := []struct {
		name string
		edit func(*deltav1.StreamIngestSpec)
		want string
	}{
		{"the source location", func(s *deltav1.StreamIngestSpec) { s.Source.Files.Location = "s3://drop/b/" }, "source.files.location is immutable"},
		{"the source format", func(s *deltav1.StreamIngestSpec) { s.Source.Files.Format = "json"; s.Source.Files.Options = nil }, "source.files.format is immutable"},
		{"the source kind", func(s *deltav1.StreamIngestSpec) {
			s.Source = deltav1.IngestSource{DeltaTable: &deltav1.DeltaTableSource{Name: "src"}}
		}, "the source's kind is immutable"},
		{"the checkpoint", func(s *deltav1.StreamIngestSpec) { s.CheckpointLocation = "s3://state/f" }, "checkpointLocation is immutable"},
	}
	for _, c := range changes {
		var fresh deltav1.StreamIngest
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(files), &fresh); err != nil {
			t.Fatal(err)
		}
		c.edit(&fresh.Spec)
		if err := k8sClient.Update(ctx, &fresh); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("changing %s: want %q, got %v", c.name, c.want, err)
		}
	}
	// Limits, options and the update method may change; they apply from the next Job.
	var fresh deltav1.StreamIngest
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(files), &fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Spec.Source.Files.Options["delimiter"] = ";"
	fresh.Spec.MaxFilesPerTrigger = ptr.To[int32](10)
	fresh.Spec.Mode, fresh.Spec.Keys = deltav1.IngestUpsert, []string{"id"}
	if err := k8sClient.Update(ctx, &fresh); err != nil {
		t.Errorf("changing options, limits and mode: %v", err)
	}
}

func TestAPIServer_ServesStatusAsASubresource(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns},
		Spec:       deltav1.DeltaTableSpec{Location: "s3://lake/t"},
	}
	if err := k8sClient.Create(ctx, table); err != nil {
		t.Fatal(err)
	}
	// A status change through the main resource is dropped ...
	table.Status.NumFiles = 7
	if err := k8sClient.Update(ctx, table); err != nil {
		t.Fatal(err)
	}
	var got deltav1.DeltaTable
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(table), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.NumFiles != 0 {
		t.Fatalf("status written through the main resource: numFiles=%d", got.Status.NumFiles)
	}
	// ... and written through /status, which in turn leaves the spec alone.
	got.Status.NumFiles = 7
	got.Spec.InspectInterval = &metav1.Duration{Duration: 5 * 60e9}
	if err := k8sClient.Status().Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	var again deltav1.DeltaTable
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(table), &again); err != nil {
		t.Fatal(err)
	}
	if again.Status.NumFiles != 7 {
		t.Errorf("status update lost: numFiles=%d", again.Status.NumFiles)
	}
	if again.Spec.InspectInterval.Duration == 5*60e9 {
		t.Errorf("spec changed through /status")
	}
}

func TestAPIServer_ServesPrinterColumnsShortNamesAndCategory(t *testing.T) {
	want := map[string]struct {
		shortNames []string
		columns    []string
	}{
		"deltatables.deltakeeper.io":      {[]string{"dt", "dtable"}, []string{"Ready", "Version", "Files", "Small", "Size", "Last Run", "Inspected"}},
		"optimizepolicies.deltakeeper.io": {[]string{"op", "optpol"}, []string{"Ready", "Schedule", "Suspend", "Tables", "Last Run", "Next"}},
		"streamingests.deltakeeper.io":    {[]string{"si", "ingest"}, []string{"Ready", "Target", "Batch", "Version", "Backlog"}},
	}
	for name, w := range want {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := k8sClient.Get(context.Background(), types.NamespacedName{Name: name}, &crd); err != nil {
			t.Fatalf("get CRD %s: %v", name, err)
		}
		if !slices.Equal(crd.Spec.Names.ShortNames, w.shortNames) {
			t.Errorf("%s shortNames = %v, want %v", name, crd.Spec.Names.ShortNames, w.shortNames)
		}
		if !slices.Contains(crd.Spec.Names.Categories, "deltakeeper") {
			t.Errorf("%s is not in the deltakeeper category", name)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Subresources == nil || crd.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("%s has no status subresource", name)
			continue
		}
		var cols []string
		for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
			cols = append(cols, c.Name)
		}
		for _, c := range w.columns {
			if !slices.Contains(cols, c) {
				t.Errorf("%s has no printer column %q (has %v)", name, c, cols)
			}
		}
	}
}

// TestKubectl_AppliesSamplesAndShowsThem runs the kubectl built by hack/build-k8s.sh against the test API
// server, exactly as a user would.
func TestKubectl_AppliesSamplesAndShowsThem(t *testing.T) {
	ns := newNamespace(t)
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(kubectl, append([]string{"--kubeconfig", kubeconfigPath, "-n", ns}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("apply", "-f", filepath.Join(repoRoot, "config", "samples"))
	out := run("get", "deltatables,optimizepolicies,streamingests")
	t.Logf("kubectl get deltatables,optimizepolicies,streamingests:\n%s", out)
	for _, want := range []string{
		"deltatable.deltakeeper.io/orders", "deltatable.deltakeeper.io/inventory",
		"optimizepolicy.deltakeeper.io/nightly-gold", "streamingest.deltakeeper.io/orders-landing",
		"READY", "LAST RUN", "SCHEDULE", "0 3 * * *", "TARGET",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get output lacks %q", want)
		}
	}
	byCategory := run("get", "deltakeeper")
	if !strings.Contains(byCategory, "deltatable.deltakeeper.io/clickstream") ||
		!strings.Contains(byCategory, "streamingest.deltakeeper.io/inventory-changes") {
		t.Errorf("kubectl get deltakeeper (category) lacks objects:\n%s", byCategory)
	}
	if short := run("get", "dt"); !strings.Contains(short, "orders") {
		t.Errorf("kubectl get dt (short name) lacks orders:\n%s", short)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
