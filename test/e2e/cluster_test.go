//go:build e2e

package e2e

// Phase A: the installation itself. The manager runs under the restricted Pod Security Standard and takes
// its leader-election Lease; the image runs as a Job; pods reach the S3 test server on the host.

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestManager_BecomesAvailableUnderRestrictedPodSecurity(t *testing.T) {
	ctx := context.Background()
	var ns corev1.Namespace
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: managerNamespace}, &ns); err != nil {
		t.Fatalf("namespace %s: %v", managerNamespace, err)
	}
	if got := ns.Labels[restrictedLabel]; got != "restricted" {
		t.Fatalf("namespace %s has %s=%q, want restricted", managerNamespace, restrictedLabel, got)
	}

	var deploy appsv1.Deployment
	waitFor(t, 2*time.Minute, "the manager Deployment to be Available", func() (bool, string, error) {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: managerName}, &deploy); err != nil {
			return false, "", err
		}
		for _, c := range deploy.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable {
				return c.Status == corev1.ConditionTrue, fmt.Sprintf("Available=%s (%s) ready=%d", c.Status, c.Message, deploy.Status.ReadyReplicas), nil
			}
		}
		return false, "no Available condition yet", nil
	})
	if deploy.Status.ReadyReplicas < 1 {
		t.Fatalf("manager Deployment is Available with %d ready replicas", deploy.Status.ReadyReplicas)
	}
	// The ready pod runs the image under test (not something pulled from elsewhere).
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(managerNamespace),
		client.MatchingLabels(deploy.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
				if !strings.HasSuffix(cs.Image, cfg.image) {
					t.Errorf("manager pod %s runs image %s, want %s", p.Name, cs.Image, cfg.image)
				}
			}
		}
	}
	if ready == 0 {
		t.Fatalf("no ready manager container among %d pods", len(pods.Items))
	}

	// Enforcement is live, so "Available" above means "admitted as restricted": a pod that may run as root is
	// refused in the same namespace.
	rootPod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-may-run-as-root", Namespace: managerNamespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: cfg.image}}},
	}
	err := k8sClient.Create(ctx, rootPod, client.DryRunAll)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "violates PodSecurity \"restricted") {
		t.Fatalf("creating a non-compliant pod in %s: err = %v, want a PodSecurity restricted violation", managerNamespace, err)
	}
}

func TestManager_HoldsTheLeaderElectionLease(t *testing.T) {
	ctx := context.Background()
	var lease coordinationv1.Lease
	waitFor(t, 2*time.Minute, "the leader-election Lease "+managerNamespace+"/"+leaseName, func() (bool, string, error) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: leaseName}, &lease)
		if apierrors.IsNotFound(err) {
			return false, "no Lease yet", nil
		}
		if err != nil {
			return false, "", err
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		return holder != "", "holder " + holder, nil
	})
	// controller-runtime names the holder "<pod name>_<uuid>": the holder must be a manager pod.
	holder := *lease.Spec.HolderIdentity
	podName, _, _ := strings.Cut(holder, "_")
	var pod corev1.Pod
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: podName}, &pod); err != nil {
		t.Fatalf("Lease holder %q is not a pod in %s: %v", holder, managerNamespace, err)
	}
	if pod.Labels["app.kubernetes.io/component"] != "manager" {
		t.Fatalf("Lease holder pod %s has labels %v, want the manager's", pod.Name, pod.Labels)
	}
	if lease.Spec.RenewTime == nil || time.Since(lease.Spec.RenewTime.Time) > time.Minute {
		t.Fatalf("Lease renewed at %v: the leader is not renewing it", lease.Spec.RenewTime)
	}
}

func TestWorkerImage_VersionJobLogsTheBuildVersion(t *testing.T) {
	ns := newNamespace(t, "version")
	logs := runJob(t, ns, "version", restrictedPod(cfg.image, "version"), 2*time.Minute)
	if got := strings.TrimSpace(logs); got != cfg.version {
		t.Fatalf("the Job's log is %q, want the host binary's `deltakeeper version`: %q", got, cfg.version)
	}
	t.Logf("Job log: %s", strings.TrimSpace(logs))
}

func TestPodNetwork_ReachesTheHostS3Server(t *testing.T) {
	ns := newNamespace(t, "s3reach")
	// A fresh object written from the host: the pod can only print it if it really read it from the server.
	key := "e2e/probe/" + ns + ".txt"
	content := "written-by-the-host-" + randomSuffix(t)
	if err := s3Store(t).Put(context.Background(), key, []byte(content)); err != nil {
		t.Fatalf("seeding %s: %v", key, err)
	}
	createS3Secret(t, ns, "s3-keys")

	pod := restrictedPod(cfg.probeImage, "s3-get", "-endpoint", cfg.s3.endpoint, "-bucket", cfg.s3.bucket, "-key", key)
	// The keys arrive the way the worker gets them: environment variables from a Secret.
	pod.Containers[0].EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "s3-keys"},
	}}}
	pod.Containers[0].Env = []corev1.EnvVar{{Name: "AWS_REGION", Value: cfg.s3.region}}
	logs := runJob(t, ns, "probe", pod, 2*time.Minute)
	t.Logf("probe log:\n%s", logs)
	if !strings.Contains(logs, "object content: "+content) {
		t.Fatalf("the probe did not read %q from %s/%s/%s", content, cfg.s3.endpoint, cfg.s3.bucket, key)
	}
}
