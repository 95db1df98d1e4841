package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// OptimizePolicyReconciler runs maintenance: at each schedule slot (and on a run-now request) it starts one
// Job per target table whose triggers are crossed, never more than one Job per table (TableLock), records
// the results and prunes the Job history.
//
//	slot due ──▶ per table: triggers? ──no──▶ nothing (BelowTriggers event)
//	                  │ yes / run-now
//	                  ▼
//	      own Job still running? ──▶ Forbid: skip · Replace: stop it, wait · Allow: wait
//	                  │ no
//	                  ▼
//	      table lock free? ──no──▶ wait (pendingSince; until startingDeadlineSeconds or the next slot)
//	                  │ yes
//	                  ▼
//	          create Job <table>-maintain-<hash>
type OptimizePolicyReconciler struct {
	reconcilerBase
}

// SetupWithManager watches policies (spec and annotation changes: run-now), their Jobs, and DeltaTables,
// whose inspections feed the triggers and whose status changes when another owner's Job frees a table.
func (r *OptimizePolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("optimizepolicy").
		For(&deltav1.OptimizePolicy{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Watches(&deltav1.DeltaTable{}, handler.EnqueueRequestsFromMapFunc(r.tableToPolicies)).
		WatchesRawSource(r.Admission.wakeSource("OptimizePolicy")).
		Complete(r)
}

// tableToPolicies maps a DeltaTable to the policies in its namespace that target it.
func (r *OptimizePolicyReconciler) tableToPolicies(ctx context.Context, obj client.Object) []reconcile.Request {
	var list deltav1.OptimizePolicyList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list OptimizePolicies for a DeltaTable", "table", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if targets(&list.Items[i], obj) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// targets reports whether a policy selects a table by name or label. A policy whose selector cannot be
// parsed targets nothing by label.
func targets(p *deltav1.OptimizePolicy, table client.Object) bool {
	if slices.Contains(p.Spec.Targets.TableNames, table.GetName()) {
		return true
	}
	if p.Spec.Targets.Selector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Targets.Selector)
	return err == nil && sel.Matches(labels.Set(table.GetLabels()))
}

// Reconcile records finished runs, prunes history, starts due runs, writes the status once, then emits
// events and metrics.
func (r *OptimizePolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var pol deltav1.OptimizePolicy
	if err := r.Get(ctx, req.NamespacedName, &pol); err != nil {
		if apierrors.IsNotFound(err) {
			setPolicyNext(req.Namespace, req.Name, nil)
			forgetPolicy(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get OptimizePolicy %s: %w", req.NamespacedName, err)
	}
	now := r.Clock.Now()
	ps := newPolicyStatus(&pol, now)
	var evq eventQueue
	var wake wakeup

	// 1. Validate what the API's CEL rules cannot: the time zone exists, the selector parses.
	view := policyView{Suspended: pol.IsSuspended(), Scheduled: pol.Spec.Schedule != "", TimeZone: pol.Spec.TimeZone}
	var sched *Schedule
	if view.Scheduled {
		s, err := ParseSchedule(pol.Spec.Schedule, pol.Spec.TimeZone)
		if err != nil {
			view.SpecReason, view.SpecError = deltav1.ReasonInvalidSchedule, err.Error()
		}
		sched = s
	}
	var selector labels.Selector
	if sel := pol.Spec.Targets.Selector; sel != nil && view.SpecError == "" {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			view.SpecReason, view.SpecError = deltav1.ReasonInvalidSpec, "targets.selector: "+err.Error()
		}
		selector = s
	}
	if err := r.checkJobTemplate(pol.Spec.JobTemplate); err != nil && view.SpecError == "" {
		view.SpecReason, view.SpecError = deltav1.ReasonInvalidSpec, err.Error()
	}
	view.NoSteps = !pol.CompactionEnabled() && !pol.ClusteringEnabled() && !pol.VacuumEnabled() && !pol.CheckpointEnabled()

	// 2. Targets and Jobs.
	tables, missing, err := r.resolveTargets(ctx, &pol, selector)
	if err != nil {
		return ctrl.Result{}, err
	}
	view.Missing = missing
	for _, t := range tables {
		view.Tables = append(view.Tables, t.Name)
	}
	ps.st.NumTargets = int32(len(tables))
	pass := &policyPass{r: r, policy: &pol, ps: ps, evq: &evq, now: now, byName: map[string]bool{}}
	if pass.jobs, err = r.policyJobs(ctx, &pol); err != nil {
		return ctrl.Result{}, err
	}
	for _, j := range pass.jobs {
		pass.byName[j.Name] = true
	}
	pods, err := r.podsByJob(ctx, pol.Namespace, client.MatchingLabels{deltav1.LabelPolicy: LabelValue(pol.Name)})
	if err != nil {
		return ctrl.Result{}, err
	}

	// 3. Record finished runs.
	whys, err := r.checkStarts(ctx, pass.jobs, pods, pol.UID, pol.Spec.JobTemplate.StartTimeoutDuration(), now, &wake)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, name := range sortedKeys(whys) {
		if whys[name] != "" {
			view.NotStarting = append(view.NotStarting, "Job "+name+": "+whys[name])
		}
	}
	var added []*finishedRun
	ps.st.RecentRuns, added = foldFinishedJobs(ps.st.RecentRuns, pass.jobs, pods, now, maxPolicyRuns, &wake)
	for _, run := range added {
		ps.applyRun(run)
		queuePolicyRunEvents(&evq, run)
	}
	ps.refreshShares(pass.jobs)

	// 4. Prune the history beyond the limits.
	if r.pruneHistory(ctx, &pol, pass.jobs, tables) {
		wake.in(requeueResult)
	}

	// 5. Start due runs.
	if view.SpecError == "" && !view.NoSteps {
		open, err := r.runDue(ctx, pass, sched, tables, &view)
		if err != nil {
			return ctrl.Result{}, err
		}
		if open {
			wake.in(requeueLockBusy)
		}
	}
	if err := pass.resumeAlone(ctx, &wake); err != nil {
		return ctrl.Result{}, err
	}
	pass.finishQueue(&wake)
	if view.Next != nil {
		wake.in(view.Next.Sub(now))
	}
	ps.st.NextScheduleTime = view.Next
	ps.st.Active = nil
	for _, j := range pass.jobs {
		if isLive(&j) && len(ps.st.Active) < maxPolicyActive {
			ps.st.Active = append(ps.st.Active, j.Name)
		}
	}
	slices.Sort(ps.st.Active)
	ps.finishTargets(view.Tables)
	oldReady := readyReason(pol.Status.Conditions)
	ps.setReady(view)
	setKstatus(ps.conds, kstatusView{})
	if newReady := readyReason(ps.st.Conditions); newReady != oldReady {
		switch newReady {
		case deltav1.ReasonTargetNotFound, deltav1.ReasonNoTargets:
			evq.warning(EventTargetNotFound, actionValidate, nil, apimeta.FindStatusCondition(ps.st.Conditions, deltav1.ConditionReady).Message)
		case deltav1.ReasonInvalidSchedule, deltav1.ReasonInvalidSpec, deltav1.ReasonNoStepsEnabled:
			evq.warning(EventInvalidSpec, actionValidate, nil, apimeta.FindStatusCondition(ps.st.Conditions, deltav1.ConditionReady).Message)
		}
	}
	ps.st.ObservedGeneration = pol.Generation

	// 6. One status write, then events and metrics.
	if stop, res, err := commitStatus(ctx, &r.reconcilerBase, &pol, &pol.Status, ps.st, evq); stop {
		return res, err
	}
	r.deleteStartFailed(ctx, pass.jobs, pol.UID, pol.Status.RecentRuns)
	for _, run := range added {
		observeRun("OptimizePolicy", pol.Namespace, run)
	}
	if view.Next != nil && !view.Suspended {
		next := float64(view.Next.Unix())
		setPolicyNext(pol.Namespace, pol.Name, &next)
	} else {
		setPolicyNext(pol.Namespace, pol.Name, nil)
	}
	setPolicyGauges(&pol, view.Tables, sched, view.Next, view.Suspended)
	if view.SpecError != "" {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("OptimizePolicy %s: %s", req.NamespacedName, view.SpecError))
	}
	return wake.result(), nil
}

// runDue starts the run-now request, the due schedule slot, or the runs still waiting from an earlier slot.
// It returns whether some run still waits.
func (r *OptimizePolicyReconciler) runDue(ctx context.Context, pass *policyPass, sched *Schedule, tables []*deltav1.DeltaTable, view *policyView) (bool, error) {
	pol, ps, now := pass.policy, pass.ps, pass.now
	open := false
	// Run-now: a human asked; it runs while suspended too, like `kubectl create job --from=cronjob/…`.
	if req := pol.RunNowRequest(); req != "" {
		done, err := pass.runSlotOnTargets(ctx, tables, runSlot{Key: "now/" + req, Time: now, RunNow: true})
		if err != nil {
			return false, err
		}
		if done {
			ps.st.LastRunNow = req
		} else {
			view.RunNowOpen, open = req, true
		}
	}
	if sched == nil || view.Suspended {
		return open, nil
	}
	var deadline *time.Duration
	if s := pol.Spec.StartingDeadlineSeconds; s != nil {
		d := time.Duration(*s) * time.Second
		deadline = &d
	}
	last := pol.CreationTimestamp.Time
	if ps.st.LastScheduleTime != nil {
		last = ps.st.LastScheduleTime.Time
	}
	plan := sched.Plan(last, now, deadline)
	if !plan.Next.IsZero() {
		view.Next = &metav1.Time{Time: plan.Next}
	}
	if !plan.Due.IsZero() {
		if !plan.Skipped.IsZero() {
			ps.st.LastSkippedTime = &metav1.Time{Time: plan.Skipped}
			pass.evq.warning(EventMissedSchedule, actionSchedule, nil, missedMessage(plan, deadline))
		}
		// A new slot replaces runs still waiting from an earlier one (at most one catch-up).
		for table, since := range ps.pending {
			if !plan.Run {
				ps.skip(table, deltav1.ReasonMissedSchedule, "the run waited past startingDeadlineSeconds", since.Time)
			}
			delete(ps.pending, table)
		}
		ps.st.LastScheduleTime = &metav1.Time{Time: plan.Due}
		if !plan.Run {
			return open, nil
		}
		done, err := pass.runSlotOnTargets(ctx, tables, scheduleSlot(plan.Due))
		pass.reportBelow(plan.Due)
		return open || !done, err
	}
	// No new slot: retry the runs still waiting, within the starting deadline.
	byName := map[string]*deltav1.DeltaTable{}
	for _, t := range tables {
		byName[t.Name] = t
	}
	for _, name := range sortedKeys(ps.pending) {
		since := ps.pending[name].Time
		table := byName[name]
		switch {
		case table == nil:
			delete(ps.pending, name)
		case deadline != nil && now.Sub(since) > *deadline:
			delete(ps.pending, name)
			msg := fmt.Sprintf("slot %s on table %s waited past startingDeadlineSeconds (%s) and was skipped", since.UTC().Format(time.RFC3339), name, deadline)
			ps.skip(name, deltav1.ReasonMissedSchedule, msg, since)
			pass.evq.warning(EventMissedSchedule, actionSchedule, nil, msg)
		default:
			done, err := pass.runSlotOnTargets(ctx, []*deltav1.DeltaTable{table}, scheduleSlot(since))
			if err != nil {
				return false, err
			}
			open = open || !done
		}
	}
	pass.reportBelow(time.Time{})
	return open, nil
}

func missedMessage(plan SlotPlan, deadline *time.Duration) string {
	count := fmt.Sprintf("%d", plan.Missed)
	if plan.TooMany {
		count = fmt.Sprintf("more than %d", maxMissedIteration)
	}
	if !plan.Run {
		return fmt.Sprintf("Missed %s slots up to %s, later than startingDeadlineSeconds (%s): skipped; next slot %s",
			count, plan.Due.UTC().Format(time.RFC3339), deadline, plan.Next.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("Missed %s slots (the manager was down or the policy suspended); running only the latest, %s",
		count, plan.Due.UTC().Format(time.RFC3339))
}

// reportBelow tells which tables a slot left alone because no trigger was crossed, in one event.
func (p *policyPass) reportBelow(slot time.Time) {
	if len(p.below) == 0 {
		return
	}
	slices.Sort(p.below)
	what := "Waiting runs"
	if !slot.IsZero() {
		what = "Slot " + slot.UTC().Format(time.RFC3339)
	}
	p.evq.normal(EventBelowTriggers, actionSchedule, nil, fmt.Sprintf("%s: no trigger crossed on %d tables: %s",
		what, len(p.below), truncate(strings.Join(p.below, ", "), 800)))
	p.below = nil
}

// resolveTargets returns the policy's tables (names and selector, same namespace), sorted, and the named
// tables that do not exist.
//
// It reads only what the policy names: the selected tables (a label-selected list) and the named ones (one
// cached Get each). Listing the whole namespace copied every table of it from the cache at each pass, and a
// policy passes at every status change of each of its tables: at 1,000 tables a namespace that was most of
// the manager's CPU.
func (r *OptimizePolicyReconciler) resolveTargets(ctx context.Context, pol *deltav1.OptimizePolicy, selector labels.Selector) ([]*deltav1.DeltaTable, []string, error) {
	var candidates []deltav1.DeltaTable
	if selector != nil {
		var list deltav1.DeltaTableList
		if err := r.List(ctx, &list, client.InNamespace(pol.Namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
			return nil, nil, fmt.Errorf("list DeltaTables in %s: %w", pol.Namespace, err)
		}
		candidates = list.Items
	}
	for _, name := range pol.Spec.Targets.TableNames {
		if slices.ContainsFunc(candidates, func(t deltav1.DeltaTable) bool { return t.Name == name }) {
			continue
		}
		var t deltav1.DeltaTable
		err := r.Get(ctx, types.NamespacedName{Namespace: pol.Namespace, Name: name}, &t)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("get DeltaTable %s/%s: %w", pol.Namespace, name, err)
		}
		candidates = append(candidates, t)
	}
	var tables []*deltav1.DeltaTable
	found := map[string]bool{}
	for i := range candidates {
		t := &candidates[i]
		found[t.Name] = true
		if t.DeletionTimestamp == nil {
			tables = append(tables, t)
		}
	}
	var missing []string
	for _, n := range pol.Spec.Targets.TableNames {
		if !found[n] {
			missing = append(missing, n)
		}
	}
	slices.SortFunc(tables, func(a, b *deltav1.DeltaTable) int { return strings.Compare(a.Name, b.Name) })
	slices.Sort(missing)
	return tables, missing, nil
}

// policyJobs lists the policy's own Jobs (a re-created policy of the same name does not inherit Jobs).
func (r *OptimizePolicyReconciler) policyJobs(ctx context.Context, pol *deltav1.OptimizePolicy) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(pol.Namespace), client.MatchingLabels{deltav1.LabelPolicy: LabelValue(pol.Name)}); err != nil {
		return nil, fmt.Errorf("list Jobs of OptimizePolicy %s/%s: %w", pol.Namespace, pol.Name, err)
	}
	return slices.DeleteFunc(list.Items, func(j batchv1.Job) bool {
		ref := metav1.GetControllerOf(&j)
		return ref == nil || ref.UID != pol.UID
	}), nil
}

// pruneHistory deletes finished Jobs beyond successfulRunsHistoryLimit and failedRunsHistoryLimit, newest
// kept. A Job is deleted only once its run is recorded in the persisted status of the policy and of its table,
// so no result is lost; it returns true when some Job must wait for that.
func (r *OptimizePolicyReconciler) pruneHistory(ctx context.Context, pol *deltav1.OptimizePolicy, jobs []batchv1.Job, tables []*deltav1.DeltaTable) bool {
	keepOK, keepFailed := pol.HistoryLimits()
	var done []*batchv1.Job
	for i := range jobs {
		if !isLive(&jobs[i]) && jobs[i].DeletionTimestamp == nil {
			done = append(done, &jobs[i])
		}
	}
	endOf := func(j *batchv1.Job) time.Time {
		_, _, c := jobFinished(j)
		return baseRecord(j, c).When()
	}
	slices.SortFunc(done, func(a, b *batchv1.Job) int { return endOf(b).Compare(endOf(a)) })
	byName := map[string]*deltav1.DeltaTable{}
	for _, t := range tables {
		byName[t.Name] = t
	}
	waiting := false
	for _, j := range done {
		_, ok, _ := jobFinished(j)
		if ok && keepOK > 0 {
			keepOK--
			continue
		}
		if !ok && keepFailed > 0 {
			keepFailed--
			continue
		}
		when := endOf(j)
		recorded := recordedIn(pol.Status.RecentRuns, maxPolicyRuns, j.Name, when)
		if t := byName[j.Annotations[deltav1.AnnotationTable]]; t != nil {
			recorded = recorded && recordedIn(t.Status.RecentRuns, maxTableRuns, j.Name, when)
		}
		if !recorded {
			waiting = true
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to delete a Job beyond the history limit", "job", j.Name)
		}
	}
	return waiting
}

// queuePolicyRunEvents explains a newly recorded maintenance run.
func queuePolicyRunEvents(evq *eventQueue, run *finishedRun) {
	rec := &run.Record
	what := fmt.Sprintf("Maintenance Job %s on table %s", rec.JobName, rec.Table)
	switch rec.Result {
	case deltav1.RunSucceeded, deltav1.RunNothingToDo:
		evq.normal(EventRunSucceeded, actionRecord, run.Job, what+" succeeded: "+rec.Message)
	default:
		queueRunProblem(evq, run, what)
	}
}

func readyReason(conds []metav1.Condition) string {
	if c := apimeta.FindStatusCondition(conds, deltav1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
