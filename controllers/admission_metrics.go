package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// The admission metrics (names fixed in the session's shared contract; the dashboard and alerts use them).
var (
	workerJobsRunning = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_worker_jobs_running",
		Help: "Worker pods of running Jobs (an Indexed Job counts its parallelism), by namespace and kind (inspect, optimize, ingest).",
	}, []string{"namespace", "kind"})

	queueLength = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_queue_length",
		Help: "Runs waiting for admission under --max-running-jobs, the per-namespace cap or the start rate, by kind.",
	}, []string{"kind"})

	queueOldestWait = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "deltakeeper_queue_oldest_wait_seconds",
		Help: "How long the longest-waiting run has waited for admission (0 when none waits).",
	})
)

func init() {
	metrics.Registry.MustRegister(workerJobsRunning, queueLength, queueOldestWait)
}
