package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/controllers"
	"github.com/deltakeeper/deltakeeper/internal/version"
)

// managerOptions are the manager's flags.
type managerOptions struct {
	metricsAddr          string
	metricsSecure        bool
	probeAddr            string
	leaderElect          bool
	leaderElectNamespace string
	workerImage          string
	watchNamespaces      []string
	allowedImages        []string
	admission            admissionFlags
	concurrency          int
	zap                  zap.Options
}

// admissionFlags cap and pace the worker Jobs (controllers.Admission).
type admissionFlags struct {
	maxRunning, maxRunningPerNamespace, startBurst int
	startRate                                      float64
}

// limits turns the flags into the controllers' limits, where 0 means "no limit".
func (f admissionFlags) limits() controllers.AdmissionLimits {
	off := func(n int) int {
		if n <= 0 {
			return -1
		}
		return n
	}
	rate := f.startRate
	if rate <= 0 {
		rate = -1
	}
	return controllers.AdmissionLimits{MaxRunning: off(f.maxRunning), MaxRunningPerNamespace: max(f.maxRunningPerNamespace, 0),
		StartRate: rate, StartBurst: f.startBurst}
}

func newManagerCommand() *cobra.Command {
	opts := managerOptions{zap: zap.Options{Development: false}}
	cmd := &cobra.Command{
		Use:   "manager",
		Short: "Run the Kubernetes controllers",
		Long: "Run the controllers for DeltaTable, OptimizePolicy and StreamIngest. The manager never reads table\n" +
			"data or Secrets: it schedules worker Jobs and records their results.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runManager(cmd, opts) },
	}
	f := cmd.Flags()
	f.StringVar(&opts.metricsAddr, "metrics-bind-address", ":8443", "address of the metrics endpoint; 0 disables it")
	f.BoolVar(&opts.metricsSecure, "metrics-secure", true, "serve metrics over HTTPS with Kubernetes authentication and authorization")
	f.StringVar(&opts.probeAddr, "health-probe-bind-address", ":8081", "address of the /healthz and /readyz probes")
	f.BoolVar(&opts.leaderElect, "leader-elect", true, "elect a leader so that only one replica reconciles")
	f.StringVar(&opts.leaderElectNamespace, "leader-election-namespace", "", "namespace of the leader-election Lease (default: the pod's namespace)")
	f.StringVar(&opts.workerImage, "worker-image", os.Getenv("DELTAKEEPER_WORKER_IMAGE"), "image of the worker Jobs (default: $DELTAKEEPER_WORKER_IMAGE, else the image of the manager's own Pod, else the release image)")
	f.StringSliceVar(&opts.watchNamespaces, "watch-namespaces", nil, "comma-separated namespaces whose DeltaTables, OptimizePolicies and StreamIngests the manager reconciles and where it creates Jobs (default: all; a namespace-scoped install needs only Roles in these)")
	f.StringSliceVar(&opts.allowedImages, "allowed-worker-images", nil, "comma-separated images a jobTemplate.image may name besides the worker image: exact references or prefixes ending in * (default: none)")
	f.IntVar(&opts.admission.maxRunning, "max-running-jobs", controllers.DefaultMaxRunningJobs,
		"most worker pods running at once, all namespaces (an Indexed Job counts its parallelism); more runs queue, oldest due first; 0: no cap")
	f.IntVar(&opts.admission.maxRunningPerNamespace, "max-running-jobs-per-namespace", 0, "most worker pods running at once in one namespace; 0: no cap")
	f.Float64Var(&opts.admission.startRate, "job-start-rate", controllers.DefaultJobStartRate, "worker Jobs started per second at most (a policy slot over many tables is paced); 0: unpaced")
	f.IntVar(&opts.admission.startBurst, "job-start-burst", controllers.DefaultJobStartBurst, "worker Jobs that may start at once before --job-start-rate paces them")
	f.IntVar(&opts.concurrency, "max-concurrent-reconciles", 4,
		"objects of one kind reconciled at once; a reconcile mostly waits for its status write, so at 10,000 tables one at a time is the limit after a mass change")
	goFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	opts.zap.BindFlags(goFlags)
	f.AddGoFlagSet(goFlags)
	return cmd
}

func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register Kubernetes types: %w", err)
	}
	if err := deltav1.AddToScheme(scheme); err != nil {
		return nil, fmt.Errorf("register deltakeeper types: %w", err)
	}
	return scheme, nil
}

func runManager(cmd *cobra.Command, opts managerOptions) error {
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	log := ctrl.Log.WithName("setup")
	if soft, source := applyMemoryLimit(os.Getenv, "/sys/fs/cgroup"); soft > 0 {
		log.Info("Set the Go soft memory limit from the container's limit", "bytes", soft, "source", source)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}

	metricsOpts := metricsserver.Options{
		BindAddress:   opts.metricsAddr,
		SecureServing: opts.metricsSecure,
		// HTTP/2 is off: it has been the vector of several denial-of-service CVEs (rapid reset).
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
	if opts.metricsSecure {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	leaseDuration, renewDeadline := 30*time.Second, 20*time.Second
	cacheOpts := controllers.CacheOptions()
	controllers.WatchNamespaces(&cacheOpts, opts.watchNamespaces, lockNamespace(&opts))
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Scheme:                        scheme,
		Cache:                         cacheOpts,
		Metrics:                       metricsOpts,
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "deltakeeper.deltakeeper.io",
		LeaderElectionNamespace:       opts.leaderElectNamespace,
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &leaseDuration,
		RenewDeadline:                 &renewDeadline,
		Controller:                    config.Controller{MaxConcurrentReconciles: max(opts.concurrency, 1)},
	})
	if err != nil {
		return fmt.Errorf("create manager: %w", err)
	}
	if err := setupControllers(cmd.Context(), mgr, &opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("add ready check: %w", err)
	}
	log.Info("Starting manager", "version", version.Version, "workerImage", opts.workerImage, "allowedWorkerImages", opts.allowedImages,
		"leaderElection", opts.leaderElect, "watchNamespaces", opts.watchNamespaces,
		"maxRunningJobs", opts.admission.maxRunning, "maxRunningJobsPerNamespace", opts.admission.maxRunningPerNamespace, "jobStartRate", opts.admission.startRate)
	if err := mgr.Start(cmd.Context()); err != nil {
		return fmt.Errorf("run manager: %w", err)
	}
	return nil
}

// setupControllers registers the reconcilers with the manager, after settling the worker image.
func setupControllers(ctx context.Context, mgr ctrl.Manager, opts *managerOptions) error {
	if opts.workerImage == "" {
		opts.workerImage = discoverWorkerImage(ctx, mgr.GetAPIReader(), os.Getenv("POD_NAMESPACE"), os.Getenv("POD_NAME"))
	}
	return controllers.SetupWithManager(mgr, controllers.Config{WorkerImage: opts.workerImage, AllowedImages: opts.allowedImages,
		LockNamespace: lockNamespace(opts), Admission: opts.admission.limits()})
}

// lockNamespace is where the per-table lock Leases live: the manager's namespace (POD_NAMESPACE from the
// downward API), else the leader-election namespace, else "default" (a manager run outside a cluster).
func lockNamespace(opts *managerOptions) string {
	for _, ns := range []string{os.Getenv("POD_NAMESPACE"), opts.leaderElectNamespace} {
		if ns != "" {
			return ns
		}
	}
	return "default"
}

// releaseImage is the worker image when neither the flag nor the manager's own Pod names one.
func releaseImage() string { return "ghcr.io/deltakeeper/deltakeeper:" + version.Version }

// discoverWorkerImage returns the image the manager itself runs, read from its own Pod (POD_NAMESPACE and
// POD_NAME come from the downward API), so worker Jobs run exactly the manager's binary even from a private
// registry or a pinned digest. It falls back to the release image outside a Pod or when the Pod cannot be
// read; the reason is logged.
func discoverWorkerImage(ctx context.Context, reader client.Reader, namespace, name string) string {
	log := ctrl.Log.WithName("setup")
	if namespace == "" || name == "" {
		log.Info("Not running in a Pod (POD_NAMESPACE/POD_NAME unset); using the release worker image", "image", releaseImage())
		return releaseImage()
	}
	var pod corev1.Pod
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &pod); err != nil {
		log.Error(err, "Cannot read the manager's own Pod; using the release worker image", "pod", namespace+"/"+name, "image", releaseImage())
		return releaseImage()
	}
	if image := managerImage(&pod); image != "" {
		return image
	}
	log.Info("The manager's Pod has no manager container; using the release worker image", "image", releaseImage())
	return releaseImage()
}

// managerImage picks the manager's container in its Pod: the one named "manager", else the one whose
// arguments start with "manager" (sidecars such as service-mesh proxies are skipped).
func managerImage(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == "manager" {
			return c.Image
		}
	}
	for _, c := range pod.Spec.Containers {
		if len(c.Args) > 0 && c.Args[0] == "manager" {
			return c.Image
		}
	}
	return ""
}
