package controllers

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The gauges the shipped alerts and dashboard (config/monitoring) join on: every object's conditions, each
// policy's schedule interval and triggers per target table (so a rule can compare a table's facts with the
// threshold of the policy that maintains it), and a table's run of failed maintenance. Names are part of the
// session's shared contract; the alert rules and the dashboard are checked against this list of names.
var (
	tableCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_condition",
		Help: "A DeltaTable's conditions: 1 for the condition's current status (True, False, Unknown), 0 for the others.",
	}, []string{"namespace", "name", "condition", "status"})

	policyCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_condition",
		Help: "An OptimizePolicy's conditions: 1 for the condition's current status (True, False, Unknown), 0 for the others.",
	}, []string{"namespace", "name", "condition", "status"})

	streamCondition = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_stream_condition",
		Help: "A StreamIngest's conditions: 1 for the condition's current status (True, False, Unknown), 0 for the others.",
	}, []string{"namespace", "name", "condition", "status"})

	policyScheduleInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_schedule_interval_seconds",
		Help: "Time between a scheduled OptimizePolicy's next two slots, per target table (name); absent while suspended or unscheduled.",
	}, []string{"namespace", "policy", "name"})

	policyMinSmallFiles = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_trigger_min_small_files",
		Help: "The minSmallFiles trigger of an OptimizePolicy (0: every slot), per target table (name).",
	}, []string{"namespace", "policy", "name"})

	policyMaxAvgDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_trigger_max_avg_depth",
		Help: "The maxAvgDepth trigger of an OptimizePolicy, per target table (name); absent when not set.",
	}, []string{"namespace", "policy", "name"})

	policyMinSkipping = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_policy_trigger_min_skipping_effectiveness",
		Help: "The minSkippingEffectiveness trigger of an OptimizePolicy, per target table (name); absent when not set.",
	}, []string{"namespace", "policy", "name"})

	tableMaintenanceFailures = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "deltakeeper_table_maintenance_consecutive_failures",
		Help: "Maintenance runs on a table that failed or were refused since its last successful one (within its recent runs).",
	}, []string{"namespace", "name"})
)

func init() {
	metrics.Registry.MustRegister(tableCondition, policyCondition, streamCondition, policyScheduleInterval,
		policyMinSmallFiles, policyMaxAvgDepth, policyMinSkipping, tableMaintenanceFailures)
}

var conditionStatuses = []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown}

// setConditionGauges publishes conditions the kube-state-metrics way: each condition has a series per status,
// 1 for the current one, so `sum by (status)` counts objects and `== 1` selects them.
func setConditionGauges(vec *prometheus.GaugeVec, namespace, name string, conds []metav1.Condition) {
	for _, c := range conds {
		for _, s := range conditionStatuses {
			v := 0.0
			if c.Status == s {
				v = 1
			}
			vec.WithLabelValues(namespace, name, c.Type, string(s)).Set(v)
		}
	}
}

// setTableHealthGauges publishes a table's conditions and its run of failed maintenance, and makes the
// last-success timestamp survive a manager restart by seeding it from the recorded runs.
func setTableHealthGauges(t *deltav1.DeltaTable) {
	setConditionGauges(tableCondition, t.Namespace, t.Name, t.Status.Conditions)
	failures := 0
	for _, r := range t.Status.RecentRuns { // newest first
		if !isMaintenanceRecord(r) {
			continue
		}
		if r.Result == deltav1.RunSucceeded || r.Result == deltav1.RunNothingToDo {
			if r.CompletionTime != nil {
				raiseLastSuccess(t.Namespace, t.Name, string(JobMaintain), r.CompletionTime.Time)
			}
			break
		}
		failures++
	}
	tableMaintenanceFailures.WithLabelValues(t.Namespace, t.Name).Set(float64(failures))
}

// isMaintenanceRecord is true for a finished maintenance run (not an inspection, an ingest or a skipped slot).
func isMaintenanceRecord(r deltav1.RunRecord) bool {
	switch r.Result {
	case deltav1.RunRunning, deltav1.RunSkipped:
		return false
	}
	return !r.HasOperation(deltav1.OperationInspect) && !r.HasOperation(deltav1.OperationIngest)
}

// lastSuccessSeen holds the value of each deltakeeper_last_success_timestamp_seconds series, so that a
// timestamp seeded from a status never moves the gauge backwards.
var lastSuccessSeen = struct {
	sync.Mutex
	at map[[3]string]time.Time
}{at: map[[3]string]time.Time{}}

// raiseLastSuccess moves a table's last-success timestamp forward to at (never back).
func raiseLastSuccess(namespace, table, operation string, at time.Time) {
	key := [3]string{namespace, table, operation}
	lastSuccessSeen.Lock()
	defer lastSuccessSeen.Unlock()
	if prev, ok := lastSuccessSeen.at[key]; ok && !at.After(prev) {
		return
	}
	lastSuccessSeen.at[key] = at
	lastSuccess.WithLabelValues(namespace, table, operation).Set(float64(at.Unix()))
}

// forgetTableHealth drops a deleted table's health series.
func forgetTableHealth(namespace, name string) {
	match := prometheus.Labels{"namespace": namespace, "name": name}
	tableCondition.DeletePartialMatch(match)
	tableMaintenanceFailures.DeletePartialMatch(match)
	lastSuccessSeen.Lock()
	defer lastSuccessSeen.Unlock()
	for k := range lastSuccessSeen.at {
		if k[0] == namespace && k[1] == name {
			delete(lastSuccessSeen.at, k)
		}
	}
}

// policyTargetsSeen remembers which tables each policy's per-target series were published for, so a table
// that left the targets loses its series without a moment in which the others are missing.
var policyTargetsSeen = struct {
	sync.Mutex
	tables map[[2]string][]string
}{tables: map[[2]string][]string{}}

var policyTargetVecs = []*prometheus.GaugeVec{policyScheduleInterval, policyMinSmallFiles, policyMaxAvgDepth, policyMinSkipping}

// setPolicyGauges publishes a policy's conditions and, per target table, its schedule interval (from the
// next two slots; none while suspended) and its triggers.
func setPolicyGauges(pol *deltav1.OptimizePolicy, tables []string, sched *Schedule, next *metav1.Time, suspended bool) {
	ns := pol.Namespace
	setConditionGauges(policyCondition, ns, pol.Name, pol.Status.Conditions)
	interval := 0.0
	if sched != nil && next != nil && !suspended {
		interval = sched.Next(next.Time).Sub(next.Time).Seconds()
	}
	tr := pol.Spec.Triggers
	if tr == nil {
		tr = &deltav1.Triggers{}
	}
	minSmall := deltav1.DefaultMinSmallFiles
	if tr.MinSmallFiles != nil {
		minSmall = *tr.MinSmallFiles
	}
	for _, table := range tables {
		set := func(vec *prometheus.GaugeVec, on bool, v float64) {
			if on {
				vec.WithLabelValues(ns, pol.Name, table).Set(v)
			} else {
				vec.DeleteLabelValues(ns, pol.Name, table)
			}
		}
		set(policyScheduleInterval, interval > 0, interval)
		set(policyMinSmallFiles, true, float64(minSmall))
		set(policyMaxAvgDepth, tr.MaxAvgDepth != nil, deref(tr.MaxAvgDepth))
		set(policyMinSkipping, tr.MinSkippingEffectiveness != nil, deref(tr.MinSkippingEffectiveness))
	}
	key := [2]string{ns, pol.Name}
	policyTargetsSeen.Lock()
	defer policyTargetsSeen.Unlock()
	for _, old := range policyTargetsSeen.tables[key] {
		if !slices.Contains(tables, old) {
			for _, vec := range policyTargetVecs {
				vec.DeleteLabelValues(ns, pol.Name, old)
			}
		}
	}
	policyTargetsSeen.tables[key] = append([]string(nil), tables...)
}

// forgetPolicy drops a deleted policy's series.
func forgetPolicy(namespace, name string) {
	policyCondition.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "name": name})
	for _, vec := range policyTargetVecs {
		vec.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "policy": name})
	}
	policyTargetsSeen.Lock()
	defer policyTargetsSeen.Unlock()
	delete(policyTargetsSeen.tables, [2]string{namespace, name})
}

func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}
