//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// restrictedLabel makes the API server enforce the restricted Pod Security Standard in a namespace, as
// config/manager does for deltakeeper-system: whatever the tests or the manager create there must comply.
const restrictedLabel = "pod-security.kubernetes.io/enforce"

func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// newNamespace creates a namespace under the restricted Pod Security Standard for one test. When the test
// fails, the namespace's objects, events and pod logs go to the test log first; the namespace is deleted
// either way (hack/e2e.sh keeps the cluster's own logs).
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   "e2e-" + prefix + "-" + randomSuffix(t),
		Labels: map[string]string{restrictedLabel: "restricted"},
	}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", ns.Name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, ns.Name)
		}
		_ = k8sClient.Delete(context.Background(), ns)
	})
	return ns.Name
}

// restrictedPod is a pod spec that the restricted Pod Security Standard admits: non-root, no privilege
// escalation, no capabilities, RuntimeDefault seccomp, and a read-only root filesystem like the manager's.
func restrictedPod(image string, args ...string) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		Containers: []corev1.Container{{
			Name:            "main",
			Image:           image,
			ImagePullPolicy: corev1.PullNever, // imported into containerd; there is no registry
			Args:            args,
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false),
				ReadOnlyRootFilesystem:   ptr.To(true),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			},
		}},
	}
}

// runJob runs pod as a one-shot Job and returns its pod's log once the Job completes. A failed or stuck Job
// fails the test with the Job's pod log and description.
func runJob(t *testing.T, ns, name string, pod corev1.PodSpec, timeout time.Duration) string {
	t.Helper()
	ctx := context.Background()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     corev1.PodTemplateSpec{Spec: pod},
		},
	}
	if err := k8sClient.Create(ctx, job); err != nil {
		t.Fatalf("creating Job %s/%s: %v", ns, name, err)
	}
	var final string
	waitFor(t, timeout, "Job "+ns+"/"+name+" to finish", func() (bool, string, error) {
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return false, "", err
		}
		for _, c := range job.Status.Conditions {
			if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
				final = string(c.Type) + ": " + c.Message
				return true, final, nil
			}
		}
		return false, fmt.Sprintf("active=%d succeeded=%d failed=%d", job.Status.Active, job.Status.Succeeded, job.Status.Failed), nil
	})
	logs := jobLogs(t, ns, name)
	if !strings.HasPrefix(final, string(batchv1.JobComplete)) {
		t.Fatalf("Job %s/%s did not complete (%s); its log:\n%s\n%s", ns, name, final, logs,
			kubectlOutput(t, "-n", ns, "describe", "job", name))
	}
	return logs
}

// jobLogs returns the logs of every pod of a Job (a Job may have retried).
func jobLogs(t *testing.T, ns, job string) string {
	t.Helper()
	ctx := context.Background()
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"job-name": job}); err != nil {
		t.Fatalf("listing pods of Job %s/%s: %v", ns, job, err)
	}
	var out strings.Builder
	for _, p := range pods.Items {
		b, err := clientset.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			fmt.Fprintf(&out, "(no log of pod %s: %v)\n", p.Name, err)
			continue
		}
		out.Write(b)
	}
	return out.String()
}

// waitFor polls check once a second until it reports done, and fails the test after timeout with the last
// status check gave. Errors from check are retried (the API server may be busy) and reported on timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() (done bool, status string, err error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	start := time.Now()
	var status string
	var lastErr error
	for {
		done, s, err := check()
		if err == nil && done {
			t.Logf("waited %s for %s: %s", time.Since(start).Round(100*time.Millisecond), what, s)
			return
		}
		if s != "" {
			status = s
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last status: %s; last error: %v", timeout, what, status, lastErr)
		}
		time.Sleep(time.Second)
	}
}

// kubectl runs the cluster's kubectl and returns its output, failing the test if it fails.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runKubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlOutput is kubectl for diagnostics: errors become part of the output.
func kubectlOutput(t *testing.T, args ...string) string {
	t.Helper()
	out, err := runKubectl(args...)
	if err != nil {
		out += fmt.Sprintf("\n(kubectl %s: %v)", strings.Join(args, " "), err)
	}
	return out
}

func runKubectl(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.kubectl, append([]string{"--kubeconfig", cfg.kubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// dumpNamespace logs what a person debugging a failed test looks at first.
func dumpNamespace(t *testing.T, ns string) {
	t.Helper()
	t.Logf("---- diagnostics of namespace %s", ns)
	t.Log(kubectlOutput(t, "-n", ns, "get", "all,events,deltatables,optimizepolicies", "-o", "wide"))
	t.Log(kubectlOutput(t, "-n", ns, "describe", "jobs,pods,deltatables,optimizepolicies"))
	var pods corev1.PodList
	if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns)); err == nil {
		for _, p := range pods.Items {
			t.Logf("---- log of pod %s/%s\n%s", ns, p.Name, kubectlOutput(t, "-n", ns, "logs", p.Name, "--all-containers"))
		}
	}
	t.Logf("---- manager log (last 100 lines)\n%s", kubectlOutput(t, "-n", managerNamespace, "logs",
		"deployment/"+managerName, "--tail=100"))
}

// s3Store opens the S3 test server's bucket from the host, to seed objects and to check what the pods wrote.
func s3Store(t *testing.T) storage.Store {
	t.Helper()
	return openS3(t, "s3://"+cfg.s3.bucket)
}

// openS3 opens a location on the S3 test server with the suite's credentials, as the host sees it.
func openS3(t *testing.T, location string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), location, storage.Config{S3: storage.S3Config{
		Endpoint:        cfg.s3.endpoint,
		Region:          cfg.s3.region,
		UsePathStyle:    true,
		AccessKeyID:     cfg.s3.accessKeyID,
		SecretAccessKey: cfg.s3.secretAccessKey,
	}})
	if err != nil {
		t.Fatalf("opening %s on the S3 test server: %v", location, err)
	}
	return st
}

// hostTable opens the table under prefix in the suite's bucket from the host and loads its latest
// version: what the assertions check the cluster's work against.
func hostTable(t *testing.T, prefix string) (storage.Store, *delta.Snapshot) {
	t.Helper()
	st := openS3(t, "s3://"+cfg.s3.bucket+"/"+prefix)
	snap, err := delta.NewTable(st).Latest(context.Background())
	if err != nil {
		t.Fatalf("loading the table from the host: %v", err)
	}
	return st, snap
}

// createS3Secret stores the S3 test server's keys in a Secret under the key names the AWS SDK and DeltaTable's
// secretRef default to.
func createS3Secret(t *testing.T, ns, name string) {
	t.Helper()
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		StringData: map[string]string{
			"AWS_ACCESS_KEY_ID":     cfg.s3.accessKeyID,
			"AWS_SECRET_ACCESS_KEY": cfg.s3.secretAccessKey,
		},
	}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatalf("creating Secret %s/%s: %v", ns, name, err)
	}
}
