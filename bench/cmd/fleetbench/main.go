// Command fleetbench measures the manager at fleet scale (bench/RESULTS.md, section "Fleet"): it starts the
// project's kube-apiserver and etcd (as envtest does) and kube-controller-manager's Job and garbage
// collector controllers, plays kubelet for the worker pods (a pod is marked Succeeded with the termination
// message a real worker writes), creates DeltaTables and OptimizePolicies, and runs `deltakeeper manager`
// as a child process behind a counting proxy. It reports the manager's peak RSS, its API requests per
// second while idle, and how long a restarted manager takes to reconcile every object.
//
//	fleetbench -manager bin/deltakeeper -tables 10000 -policies 1000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/kubeenv"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

type options struct {
	manager                     string
	tables, policies, nsCount   int
	inspect                     int
	idle, settle, reconcileWait time.Duration
	fillWait                    time.Duration
	memoryLimitMiB              int
	managerArgs                 string
}

// report is the benchmark's result, printed as one JSON object.
type report struct {
	Tables, Policies, Namespaces int
	// FillSeconds is how long the first inspection of every table took (manager, Job controller, pods).
	FillSeconds float64
	InspectJobs int
	// PeakRSSMiB is the largest VmHWM of the two manager processes.
	PeakRSSMiB, PeakRSSFirstMiB, PeakRSSRestartMiB float64
	// HeapInUseIdleMiB is the first manager's Go heap in use at the end of the idle window.
	HeapInUseIdleMiB float64
	MemoryLimitMiB   int
	// IdleRequestsPerSecond is the manager's requests through the proxy while nothing is due, by verb too.
	IdleRequestsPerSecond float64
	IdleByVerb            map[string]int
	IdleSeconds           float64
	// RestartReconcileSeconds is from the second manager's start until it reconciled every table and policy.
	RestartReconcileSeconds float64
	RestartRequests         int
	Load                    string
	CPUSecondsManager       float64
}

func main() {
	var o options
	flag.StringVar(&o.manager, "manager", "bin/deltakeeper", "the deltakeeper binary")
	flag.IntVar(&o.tables, "tables", 10000, "DeltaTables")
	flag.IntVar(&o.policies, "policies", 1000, "OptimizePolicies (each targets tables/policies tables by name)")
	flag.IntVar(&o.nsCount, "namespaces", 10, "namespaces the objects are spread over")
	flag.IntVar(&o.inspect, "inspect", 1000, "tables whose first inspection runs as a worker Job (manager, Job controller, pod); "+
		"the others start with the status of an inspected table, so that the benchmark takes minutes, not an hour")
	flag.DurationVar(&o.idle, "idle", 60*time.Second, "length of the idle measurement")
	flag.DurationVar(&o.settle, "settle", 20*time.Second, "wait after the fill before the idle measurement")
	flag.DurationVar(&o.reconcileWait, "reconcile-timeout", 10*time.Minute, "give up waiting for the restarted manager after this")
	flag.IntVar(&o.memoryLimitMiB, "memory-limit-mib", 256, "the container memory limit the manager is told (DELTAKEEPER_MEMORY_LIMIT; soft limit 90%)")
	flag.DurationVar(&o.fillWait, "fill-timeout", 30*time.Minute, "give up waiting for the first inspections after this")
	flag.StringVar(&o.managerArgs, "manager-args", "--max-running-jobs=400 --job-start-rate=100 --job-start-burst=100",
		"extra manager flags (the fill inspects every table once; the default cap would take 10,000/5 s)")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, o options) error {
	env, err := kubeenv.NewEnvironment()
	if err != nil {
		return err
	}
	// A fleet's worth of objects: the default request limits of the test server are too low for the fill.
	env.ControlPlane.GetAPIServer().Configure().Set("max-requests-inflight", "1000").Set("max-mutating-requests-inflight", "500")
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("start kube-apiserver and etcd: %w", err)
	}
	defer func() { _ = env.Stop() }()
	cfg.QPS, cfg.Burst = 2000, 4000
	dir, err := os.MkdirTemp("", "fleetbench-")
	if err != nil {
		return err
	}
	if os.Getenv("FLEETBENCH_KEEP") == "" {
		defer os.RemoveAll(dir)
	} else {
		log.Printf("logs in %s", dir)
	}
	admin, err := env.AddUser(envtest.User{Name: "fleetbench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	adminKubeconfig := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(adminKubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	kcm, err := startControllerManager(ctx, env.BinaryAssetsDirectory, adminKubeconfig, dir)
	if err != nil {
		return err
	}
	defer kcm.stop()

	c, err := newClient(admin.Config())
	if err != nil {
		return err
	}
	log.Printf("creating %d tables and %d policies in %d namespaces", o.tables, o.policies, o.nsCount)
	if err := createFleet(ctx, c, o); err != nil {
		return err
	}
	completer := startCompleter(ctx, c)
	defer completer.stop()

	proxy, err := startProxy(admin.Config())
	if err != nil {
		return err
	}
	defer proxy.close()
	managerKubeconfig := filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(managerKubeconfig, proxy.kubeconfig(), 0o600); err != nil {
		return err
	}

	rep := report{Tables: o.tables, Policies: o.policies, Namespaces: o.nsCount, MemoryLimitMiB: o.memoryLimitMiB}
	// 1. First manager: inspect every table once, then stay idle.
	m1, err := startManager(o.manager, managerKubeconfig, o.managerArgs, dir, "manager-1", o.memoryLimitMiB)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := waitInspected(ctx, c, m1, o, start.Add(o.fillWait)); err != nil {
		m1.stop()
		return err
	}
	rep.FillSeconds = time.Since(start).Seconds()
	rep.InspectJobs = completer.completed()
	log.Printf("every table inspected after %.0fs (%d pods completed)", rep.FillSeconds, rep.InspectJobs)
	time.Sleep(o.settle)
	before := proxy.snapshot()
	time.Sleep(o.idle)
	idle := proxy.snapshot().minus(before)
	rep.IdleSeconds = o.idle.Seconds()
	rep.IdleRequestsPerSecond = float64(idle.total()) / o.idle.Seconds()
	rep.IdleByVerb = idle
	log.Printf("idle: %.2f requests/s %v", rep.IdleRequestsPerSecond, idle)
	rep.PeakRSSFirstMiB = m1.peakRSSMiB()
	rep.HeapInUseIdleMiB = m1.gauge("go_memstats_heap_inuse_bytes") / (1 << 20)
	cpu1 := m1.stop()

	// 2. Restart: a new manager, nothing remembered; time until every object was reconciled once.
	before = proxy.snapshot()
	m2, err := startManager(o.manager, managerKubeconfig, o.managerArgs, dir, "manager-2", o.memoryLimitMiB)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := m2.waitReconciled(ctx, map[string]int{"deltatable": o.tables, "optimizepolicy": o.policies}, start.Add(o.reconcileWait)); err != nil {
		m2.stop()
		return err
	}
	rep.RestartReconcileSeconds = time.Since(start).Seconds()
	rep.RestartRequests = proxy.snapshot().minus(before).total()
	log.Printf("restart: every object reconciled after %.1fs", rep.RestartReconcileSeconds)
	time.Sleep(5 * time.Second)
	rep.PeakRSSRestartMiB = m2.peakRSSMiB()
	cpu2 := m2.stop()
	rep.PeakRSSMiB = max(rep.PeakRSSFirstMiB, rep.PeakRSSRestartMiB)
	rep.CPUSecondsManager = (cpu1 + cpu2).Seconds()
	rep.Load = loadAverage()
	out, _ := json.MarshalIndent(rep, "", "  ")
	fmt.Println(string(out))
	return nil
}

func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	var a, b, c string
	_, _ = fmt.Sscan(string(data), &a, &b, &c)
	return a + " " + b + " " + c
}
