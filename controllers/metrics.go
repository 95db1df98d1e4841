package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Metrics on controller-runtime's registry, served by the manager's metrics endpoint. Labels are kinds,
// operations, results, namespaces, object names and column names: never a location or URI, which may name
// buckets and is unbounded.
var (
	runsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltakeeper_runs_total",
		Help: "Finished worker runs by the kind that started them, the operation (inspect, maintain) and the result.",
	}, []string{"kind", "operation", "result"})

	runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "deltakeeper_run_duration_seconds",
		Help:    "Duration of finished worker runs, from Job start to completion.",
		Buckets: prometheus.ExponentialBuckets(1, 2.5, 12), // 1s … about 16h
	}, []string{"kind", "operation"})

	lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_last_success_timestamp_seconds",
		Help: "Completion time of the last successful run per table and operation; alert on time() minus this.",
	}, []string{"namespace", "table", "operation"})

	tableFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_files",
		Help: "Live data files of a table, as last reported.",
	}, []string{"namespace", "name"})

	tableSmallFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_small_files",
		Help: "Live data files smaller than half the target file size.",
	}, []string{"namespace", "name"})

	tableBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_bytes",
		Help: "Total size of a table's live data files.",
	}, []string{"namespace", "name"})

	tableAvgDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_avg_depth",
		Help: "Mean number of files a point value of a clustering column falls into (1 is perfect).",
	}, []string{"namespace", "name", "column"})

	tableSkipping = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_skipping_effectiveness",
		Help: "Share of non-matching files a point query on a clustering column can skip (1 is perfect).",
	}, []string{"namespace", "name", "column"})

	policyNextSchedule = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_next_schedule_timestamp_seconds",
		Help: "Next schedule slot of an OptimizePolicy (absent while suspended or unscheduled).",
	}, []string{"namespace", "name"})

	ingestBatches = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltakeeper_ingest_batches_total",
		Help: "Batches a StreamIngest committed, as its Jobs reported them.",
	}, []string{"namespace", "name"})

	ingestRows = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltakeeper_ingest_rows_total",
		Help: "Rows a StreamIngest's batches wrote.",
	}, []string{"namespace", "name"})

	ingestBytes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "deltakeeper_ingest_bytes_total",
		Help: "Source bytes a StreamIngest's batches read.",
	}, []string{"namespace", "name"})

	ingestBacklogFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_ingest_backlog_files",
		Help: "Source files no batch has taken yet, as the stream's last Job saw them.",
	}, []string{"namespace", "name"})

	ingestBacklogBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_ingest_backlog_bytes",
		Help: "Bytes of the source files no batch has taken yet.",
	}, []string{"namespace", "name"})

	ingestOldestPending = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_ingest_oldest_pending_age_seconds",
		Help: "Age of the oldest source file no batch has taken yet (0 when caught up); alert when it grows.",
	}, []string{"namespace", "name"})

	ingestBatchDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "deltakeeper_ingest_batch_duration_seconds",
		Help:    "Duration of a StreamIngest's batches: each Job's run time over its batches, observed once per batch.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2.5, 12), // 0.5s … about 2h
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(runsTotal, runDuration, lastSuccess, tableFiles, tableSmallFiles, tableBytes,
		tableAvgDepth, tableSkipping, policyNextSchedule, ingestBatches, ingestRows, ingestBytes, ingestBacklogFiles,
		ingestBacklogBytes, ingestOldestPending, ingestBatchDuration)
}

// observeRun counts a finished run that kind (DeltaTable, OptimizePolicy) started.
func observeRun(kind, namespace string, run *finishedRun) {
	rec := &run.Record
	runsTotal.WithLabelValues(kind, string(run.Kind), string(rec.Result)).Inc()
	if rec.StartTime != nil && rec.CompletionTime != nil {
		runDuration.WithLabelValues(kind, string(run.Kind)).Observe(rec.CompletionTime.Sub(rec.StartTime.Time).Seconds())
	}
	if (rec.Result == deltav1.RunSucceeded || rec.Result == deltav1.RunNothingToDo) && rec.CompletionTime != nil {
		raiseLastSuccess(namespace, rec.Table, string(run.Kind), rec.CompletionTime.Time)
	}
}

// setTableGauges publishes a table's facts. Column series are replaced so renamed clustering columns do not
// linger.
func setTableGauges(t *deltav1.DeltaTable) {
	ns, name := t.Namespace, t.Name
	setTableHealthGauges(t)
	if !t.IsInspected() {
		return
	}
	tableFiles.WithLabelValues(ns, name).Set(float64(t.Status.NumFiles))
	tableSmallFiles.WithLabelValues(ns, name).Set(float64(t.Status.NumSmallFiles))
	tableBytes.WithLabelValues(ns, name).Set(float64(t.Status.SizeBytes))
	match := prometheus.Labels{"namespace": ns, "name": name}
	tableAvgDepth.DeletePartialMatch(match)
	tableSkipping.DeletePartialMatch(match)
	for _, q := range t.Status.Clustering {
		if q.Status != "ok" {
			continue
		}
		tableAvgDepth.WithLabelValues(ns, name, q.Column).Set(q.AvgDepth)
		tableSkipping.WithLabelValues(ns, name, q.Column).Set(q.SkippingEffectiveness)
	}
}

// forgetTable drops a deleted table's series.
func forgetTable(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "name": name}
	for _, g := range []*prometheus.GaugeVec{tableFiles, tableSmallFiles, tableBytes, tableAvgDepth, tableSkipping} {
		g.DeletePartialMatch(match)
	}
	lastSuccess.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "table": name})
	forgetTableHealth(namespace, name)
}

// setPolicyNext publishes a policy's next slot, or drops it.
func setPolicyNext(namespace, name string, next *float64) {
	if next == nil {
		policyNextSchedule.DeleteLabelValues(namespace, name)
		return
	}
	policyNextSchedule.WithLabelValues(namespace, name).Set(*next)
}

// observeIngest counts a finished ingest Job's batches, rows and bytes.
func observeIngest(si *deltav1.StreamIngest, run *finishedRun, _ outcome) {
	if run.Result == nil || run.Result.Ingest == nil {
		return
	}
	in := run.Result.Ingest
	ns, name := si.Namespace, si.Name
	ingestBatches.WithLabelValues(ns, name).Add(float64(in.NumBatches))
	ingestRows.WithLabelValues(ns, name).Add(float64(in.Rows))
	var bytes int64
	for _, b := range in.Batches {
		bytes += b.Bytes
	}
	ingestBytes.WithLabelValues(ns, name).Add(float64(bytes))
	if in.NumBatches > 0 && run.Result.DurationMs > 0 {
		per := float64(run.Result.DurationMs) / 1000 / float64(in.NumBatches)
		for range in.NumBatches {
			ingestBatchDuration.WithLabelValues(ns, name).Observe(per)
		}
	}
}

// setStreamGauges publishes a stream's backlog.
func setStreamGauges(si *deltav1.StreamIngest) {
	setConditionGauges(streamCondition, si.Namespace, si.Name, si.Status.Conditions)
	b := si.Status.Backlog
	if b == nil {
		return
	}
	ns, name := si.Namespace, si.Name
	ingestBacklogFiles.WithLabelValues(ns, name).Set(float64(b.Files))
	ingestBacklogBytes.WithLabelValues(ns, name).Set(float64(b.Bytes))
	age := 0.0
	if b.OldestPendingAge != nil {
		age = b.OldestPendingAge.Seconds()
	}
	ingestOldestPending.WithLabelValues(ns, name).Set(age)
}

// forgetStream drops a deleted stream's series.
func forgetStream(namespace, name string) {
	for _, g := range []*prometheus.GaugeVec{ingestBacklogFiles, ingestBacklogBytes, ingestOldestPending} {
		g.DeleteLabelValues(namespace, name)
	}
	for _, c := range []*prometheus.CounterVec{ingestBatches, ingestRows, ingestBytes} {
		c.DeleteLabelValues(namespace, name)
	}
	ingestBatchDuration.DeleteLabelValues(namespace, name)
	streamCondition.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
}
