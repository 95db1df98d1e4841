package controllers

import (
	"maps"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The worker pod's fixed shape. The worker image is the manager's own image (one binary): its entrypoint is
// the deltakeeper binary, so a Job only passes arguments (`worker inspect s3://…`).
const (
	workerContainer        = "worker"
	terminationMessagePath = "/dev/termination-log"
	workerUID              = 65532 // distroless nonroot
	tmpVolume              = "tmp"
	caVolume               = "ca-bundle"
	caMountDir             = "/etc/deltakeeper/ca"
	caFileName             = "ca-bundle.pem"
	dataVolume             = "data"
	defaultMountPath       = "/data"
)

// Defaults for a template that says nothing about resources: inspect reads the log and a checkpoint,
// maintenance streams row groups and spills sorts to /tmp, so a modest request with a 2Gi ceiling fits most
// tables; larger tables set jobTemplate.resources.
var (
	defaultResources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("250m"),
			corev1.ResourceMemory: resource.MustParse("512Mi"),
		},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	// defaultScratch bounds the /tmp emptyDir where clustering spills its sorts; an ephemeral-storage limit in
	// the template replaces it. It is a cap, not a reservation.
	defaultScratch = resource.MustParse("20Gi")
)

// JobRequest is everything a worker Job is built from; BuildJob is a pure function of it.
type JobRequest struct {
	Kind      JobKind
	OwnerKind string // DeltaTable or OptimizePolicy: the controller owner of the Job
	Owner     metav1.Object
	Table     *deltav1.DeltaTable
	// Policy is the OptimizePolicy's name for maintenance Jobs.
	Policy string
	// Stream is the StreamIngest's name for ingest Jobs.
	Stream   string
	Template *deltav1.JobTemplate
	// Args is the worker command after `worker`, e.g. ["inspect", "s3://b/t", "--quality"]; the output flags
	// are appended by BuildJob.
	Args       []string
	Operations []deltav1.Operation
	// SlotKey identifies the slot (schedule time, run-now value, inspect attempt) within the owner; it is
	// hashed into the Job name.
	SlotKey   string
	Scheduled time.Time
	Trigger   string
	// Generation is the DeltaTable generation an inspect Job applies, or the StreamIngest generation an
	// ingest Job runs.
	Generation int64
	// Image is the worker image used when the template names none.
	Image string
	// Shares makes the Job an Indexed Job of a scale-out run (scaleout.go); nil for one pod.
	Shares *ShareRequest
	// Exclusive marks a maintenance Job that runs alone: keyed streams wait for it (exclusive.go).
	// Suspended creates it suspended, to be resumed when the keyed ingest Jobs it waits for have ended.
	Exclusive, Suspended bool
	// KeyedWrite is the keyed update method of an ingest Job (upsert, update, delete), "" for the others.
	KeyedWrite string
}

// Name is the Job's deterministic name.
func (r *JobRequest) Name() string {
	return JobName(r.Table.Name, r.Kind, ownerKey(r.OwnerKind, r.Owner), r.SlotKey)
}

// BuildJob renders the worker Job for a request (see testdata/inspect-job.yaml for a rendered example).
func BuildJob(r *JobRequest) *batchv1.Job {
	t := r.Template
	if t == nil {
		t = &deltav1.JobTemplate{}
	}
	labels := workerLabels(r.Table.Name, r.Kind, r.Policy)
	annotations := map[string]string{
		deltav1.AnnotationTable:         r.Table.Name,
		deltav1.AnnotationScheduledTime: r.Scheduled.UTC().Format(time.RFC3339),
		deltav1.AnnotationOperations:    joinOperations(r.Operations),
	}
	if r.Trigger != "" {
		annotations[deltav1.AnnotationTrigger] = r.Trigger
	}
	if r.Policy != "" {
		annotations[deltav1.AnnotationPolicy] = r.Policy
	}
	if r.Kind == JobInspect || r.Kind == JobIngest {
		annotations[deltav1.AnnotationGeneration] = strconv.FormatInt(r.Generation, 10)
	}
	if r.Stream != "" {
		labels[deltav1.LabelStream] = LabelValue(r.Stream)
		annotations[deltav1.AnnotationStream] = r.Stream
	}
	if r.Exclusive {
		annotations[deltav1.AnnotationExclusive] = "true"
	}
	if r.KeyedWrite != "" {
		annotations[deltav1.AnnotationKeyedWrite] = r.KeyedWrite
	}

	podLabels := maps.Clone(filterUserLabels(t.PodLabels))
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, cloudPodLabels(r.Table))
	maps.Copy(podLabels, labels) // ours win over the template's
	podAnnotations := maps.Clone(t.PodAnnotations)
	if podAnnotations == nil {
		podAnnotations = map[string]string{}
	}
	podAnnotations[deltav1.AnnotationTable] = r.Table.Name

	image := r.Image
	if t.Image != "" {
		image = t.Image
	}
	resources := *t.Resources.DeepCopy()
	if len(resources.Requests) == 0 && len(resources.Limits) == 0 && len(resources.Claims) == 0 {
		resources = *defaultResources.DeepCopy()
	}
	scratch := defaultScratch
	if q, ok := resources.Limits[corev1.ResourceEphemeralStorage]; ok {
		scratch = q
	}

	sa, automount := serviceAccount(r.Table, t)
	volumes, mounts := storageVolumes(r.Table, scratch)
	args := append([]string{"worker"}, r.Args...)
	args = append(args, "-o", "json", "--result-file", terminationMessagePath)

	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        r.Name(),
			Namespace:   r.Table.Namespace,
			Labels:      labels,
			Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         deltav1.GroupVersion.String(),
				Kind:               r.OwnerKind,
				Name:               r.Owner.GetName(),
				UID:                r.Owner.GetUID(),
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To(t.Backoff()),
			ActiveDeadlineSeconds:   ptr.To(t.ActiveDeadline()),
			TTLSecondsAfterFinished: ptr.To(t.TTLAfterFinished()),
			PodFailurePolicy:        podFailurePolicy(),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					ServiceAccountName:           sa,
					AutomountServiceAccountToken: ptr.To(automount),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext: &corev1.PodSecurityContext{
						RunAsNonRoot: ptr.To(true),
						RunAsUser:    ptr.To[int64](workerUID),
						RunAsGroup:   ptr.To[int64](workerUID),
						FSGroup:      fsGroup(r.Table),
						// OnRootMismatch: a recursive chown of a large table volume on every run would take hours.
						FSGroupChangePolicy: fsGroupChangePolicy(r.Table),
						SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
					},
					ImagePullSecrets:  t.ImagePullSecrets,
					NodeSelector:      t.NodeSelector,
					Tolerations:       t.Tolerations,
					Affinity:          t.Affinity,
					PriorityClassName: t.PriorityClassName,
					Volumes:           volumes,
					Containers: []corev1.Container{{
						Name:                     workerContainer,
						Image:                    image,
						ImagePullPolicy:          t.ImagePullPolicy,
						Args:                     args,
						Env:                      workerEnv(r.Table),
						Resources:                resources,
						VolumeMounts:             mounts,
						TerminationMessagePath:   terminationMessagePath,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
							SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
						},
					}},
				},
			},
		},
	}
	if r.Shares != nil {
		makeIndexed(job, r.Shares, t.Backoff())
	}
	if r.Suspended {
		job.Spec.Suspend = ptr.To(true)
	}
	return job
}

// podFailurePolicy fails the Job at once when the worker refuses (result.ExitRefused: a corrupt table,
// an unsupported feature, a bad argument; retrying cannot help, see docs/exit-codes.md), lets failures
// (result.ExitFailed: may pass on retry) count against backoffLimit, and does not count disruptions
// (eviction, preemption) at all: runs are idempotent.
func podFailurePolicy() *batchv1.PodFailurePolicy {
	return &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{
			Action: batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(workerContainer),
				Operator:      batchv1.PodFailurePolicyOnExitCodesOpIn,
				Values:        []int32{result.ExitRefused},
			},
		},
		{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
		},
	}}
}

// serviceAccount picks the pod's ServiceAccount: the template's override, else the ambient-identity account
// of the table's credentials, else the namespace default. The API token is mounted only for an explicit
// account used as the identity: IRSA, EKS Pod Identity and AKS workload identity exchange a projected token
// for cloud credentials; static keys and the default account need no token.
func serviceAccount(table *deltav1.DeltaTable, t *deltav1.JobTemplate) (string, bool) {
	sa, staticKeys := identityServiceAccount(table)
	if t.ServiceAccountName != "" {
		sa = t.ServiceAccountName
	}
	return sa, sa != "" && !staticKeys
}

// workerEnv is the worker's environment: scratch space, the Go memory limit from the container's memory
// limit, and the storage settings: S3's under their standard AWS names, Azure's and GCS's as cloudEnv
// writes them. Credentials are references to the table's Secret, resolved by the kubelet; the manager never
// sees them.
func workerEnv(table *deltav1.DeltaTable) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "HOME", Value: "/tmp"},
		{Name: "TMPDIR", Value: "/tmp"},
		{Name: "GOMEMLIMIT", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{
			ContainerName: workerContainer, Resource: "limits.memory", Divisor: resource.MustParse("1"),
		}}},
	}
	env = append(env, cloudEnv(table)...)
	s3 := table.S3()
	if s3 == nil {
		return env
	}
	if s3.Endpoint != "" {
		env = append(env, corev1.EnvVar{Name: "AWS_ENDPOINT_URL_S3", Value: s3.Endpoint})
	}
	if s3.Region != "" {
		env = append(env, corev1.EnvVar{Name: "AWS_REGION", Value: s3.Region})
	}
	if s3.ForcePathStyle {
		env = append(env, corev1.EnvVar{Name: "DELTAKEEPER_S3_PATH_STYLE", Value: "true"})
	}
	if s3.CABundle != nil {
		env = append(env, corev1.EnvVar{Name: "AWS_CA_BUNDLE", Value: caMountDir + "/" + caFileName})
	}
	if s3.Credentials != nil && s3.Credentials.SecretRef != nil {
		ref := s3.Credentials.SecretRef
		secretEnv := func(name, key, def string) corev1.EnvVar {
			if key == "" {
				key = def
			}
			return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: key,
			}}}
		}
		env = append(env,
			secretEnv("AWS_ACCESS_KEY_ID", ref.AccessKeyIDKey, "AWS_ACCESS_KEY_ID"),
			secretEnv("AWS_SECRET_ACCESS_KEY", ref.SecretAccessKeyKey, "AWS_SECRET_ACCESS_KEY"))
		if ref.SessionTokenKey != "" {
			env = append(env, secretEnv("AWS_SESSION_TOKEN", ref.SessionTokenKey, ""))
		}
	}
	return env
}

// storageVolumes returns the pod's volumes and the worker's mounts: scratch /tmp (the root filesystem is
// read-only), the CA bundle and a GCS service-account key read-only, and the table's PersistentVolumeClaim
// for file:// tables.
func storageVolumes(table *deltav1.DeltaTable, scratch resource.Quantity) ([]corev1.Volume, []corev1.VolumeMount) {
	volumes := []corev1.Volume{{
		Name:         tmpVolume,
		VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &scratch}},
	}}
	mounts := []corev1.VolumeMount{{Name: tmpVolume, MountPath: "/tmp"}}
	if s3 := table.S3(); s3 != nil && s3.CABundle != nil {
		volumes = append(volumes, corev1.Volume{Name: caVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: s3.CABundle.LocalObjectReference,
				Items:                []corev1.KeyToPath{{Key: s3.CABundle.Key, Path: caFileName}},
				Optional:             s3.CABundle.Optional,
			},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: caVolume, MountPath: caMountDir, ReadOnly: true})
	}
	cloudVols, cloudMounts := cloudVolumes(table)
	volumes, mounts = append(volumes, cloudVols...), append(mounts, cloudMounts...)
	if local := table.Local(); local != nil {
		path := local.MountPath
		if path == "" {
			path = defaultMountPath
		}
		volumes = append(volumes, corev1.Volume{Name: dataVolume, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: local.ClaimName},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: dataVolume, MountPath: path})
	}
	return volumes, mounts
}

// fsGroup makes a table volume writable for the non-root worker; other pods have no volume that needs it.
func fsGroup(table *deltav1.DeltaTable) *int64 {
	if table.Local() == nil {
		return nil
	}
	return ptr.To[int64](workerUID)
}

func fsGroupChangePolicy(table *deltav1.DeltaTable) *corev1.PodFSGroupChangePolicy {
	if table.Local() == nil {
		return nil
	}
	return ptr.To(corev1.FSGroupChangeOnRootMismatch)
}

// filterUserLabels drops template pod labels in deltakeeper's or the Job controller's namespaces: they would
// make pods look like another table's or Job's. The app.kubernetes.io labels we set are overwritten anyway.
func filterUserLabels(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		if strings.HasPrefix(k, "deltakeeper.io/") || strings.HasPrefix(k, "batch.kubernetes.io/") ||
			k == "job-name" || k == "controller-uid" {
			continue
		}
		out[k] = v
	}
	return out
}

func joinOperations(ops []deltav1.Operation) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = string(op)
	}
	return strings.Join(s, ",")
}

// splitOperations parses the operations annotation.
func splitOperations(s string) []deltav1.Operation {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	ops := make([]deltav1.Operation, 0, len(parts))
	for _, p := range parts {
		ops = append(ops, deltav1.Operation(p))
	}
	return ops
}
