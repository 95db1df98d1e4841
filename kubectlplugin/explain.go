package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/controllers"
)

func newExplainCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "explain TABLE",
		Short: "Why the table's last run did or did not happen, and what happens next",
		Long: "Reads the table's conditions and history, its lock (the Lease a running Job holds), and every policy that\n" +
			"targets it: its schedule, suspension, triggers judged against the table's last inspection, a run waiting\n" +
			"for the lock, and the policy's own Ready message (which names what its runs wait for).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, name, err := parseRef(args[0], kindTable)
			if err != nil {
				return err
			}
			return o.explain(cmd.Context(), name)
		},
	}
}

func (o *Options) explain(ctx context.Context, name string) error {
	var t deltav1.DeltaTable
	if err := o.get(ctx, name, &t); err != nil {
		return err
	}
	out := o.Out
	h := healthOf(t.Generation, t.Status.ObservedGeneration, t.Status.Conditions, false)
	fmt.Fprintf(out, "deltatable/%s in %s: %s (%s)\n  %s\n", t.Name, t.Namespace, paint(o.colorOn(), h), h.Reason, h.Message)

	fmt.Fprintln(out, "\nConditions:")
	for _, c := range t.Status.Conditions {
		fmt.Fprintf(out, "  %s=%s %s (%s): %s\n", c.Type, c.Status, c.Reason, o.age(c.LastTransitionTime.Time), oneLine(c.Message, 160))
	}

	fmt.Fprintln(out, "\nLast run:")
	var why []string
	if r := lastMaintenance(t.Status.RecentRuns); r != nil {
		fmt.Fprintf(out, "  %s %s: %s (%s) by Job %s: %s\n", opsOf(r), o.age(r.When()), r.Result, dash(r.Reason), dash(r.JobName), oneLine(r.Message, 160))
	} else {
		fmt.Fprintln(out, "  no maintenance run recorded")
	}

	fmt.Fprintln(out, "\nLock:")
	holder, err := o.lockOf(ctx, &t, out)
	if err != nil {
		return err
	}
	if holder != "" {
		why = append(why, "Job "+holder+" holds the table's lock: nothing else starts on the table until it ends")
	}
	if w := o.queueLine(out, "  ", "the table's next Job", t.Status.Queue); w != "" {
		why = append(why, w)
	}

	var policies deltav1.OptimizePolicyList
	if err := o.client.List(ctx, &policies, client.InNamespace(t.Namespace)); err != nil {
		return fmt.Errorf("list OptimizePolicies: %w", err)
	}
	fmt.Fprintln(out, "\nPolicies:")
	found := false
	for i := range policies.Items {
		p := &policies.Items[i]
		if !targets(p, t.Name) {
			continue
		}
		found = true
		why = append(why, o.explainPolicy(out, p, &t, holder)...)
	}
	if !found {
		fmt.Fprintln(out, "  no OptimizePolicy targets this table")
		why = append(why, "no OptimizePolicy targets the table, so nothing maintains it")
	}
	if len(t.Status.Streams) > 0 {
		fmt.Fprintf(out, "\nStreams writing it: %s (appends take no lock)\n", strings.Join(t.Status.Streams, ", "))
	}

	if h.Word == "Stalled" {
		why = append([]string{"the table is stalled (" + h.Reason + "): nothing runs until its spec or the table changes"}, why...)
	}
	fmt.Fprintln(out, "\nWhy:")
	for _, w := range why {
		fmt.Fprintln(out, "  - "+w)
	}
	return nil
}

// lockOf prints the table's lock: the Lease whose annotation names the table, its holder and the holder
// Job's state. It returns the holder while that Job runs.
func (o *Options) lockOf(ctx context.Context, t *deltav1.DeltaTable, out io.Writer) (string, error) {
	var leases coordinationv1.LeaseList
	if err := o.client.List(ctx, &leases, client.InNamespace(t.Namespace)); err != nil {
		return "", fmt.Errorf("list Leases (the table locks): %w", err)
	}
	for _, l := range leases.Items {
		if l.Annotations[deltav1.AnnotationTable] != t.Name && l.Name != controllers.LeaseName(t.Name) {
			continue
		}
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == "" {
			fmt.Fprintf(out, "  Lease %s: free\n", l.Name)
			return "", nil
		}
		since := ""
		if l.Spec.AcquireTime != nil {
			since = ", taken " + o.age(l.Spec.AcquireTime.Time)
		}
		var job batchv1.Job
		err := o.client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: holder}, &job)
		switch {
		case apierrors.IsNotFound(err):
			fmt.Fprintf(out, "  Lease %s: held by Job %s%s, which does not exist (a stale lock: the next start takes it over)\n", l.Name, holder, since)
			return "", nil
		case err != nil:
			return "", fmt.Errorf("get the lock holder Job %s: %w", holder, err)
		case jobDone(&job):
			fmt.Fprintf(out, "  Lease %s: held by Job %s%s, which has finished (released on the next pass)\n", l.Name, holder, since)
			return "", nil
		}
		fmt.Fprintf(out, "  Lease %s: held by running Job %s%s (%s)\n", l.Name, holder, since, job.Annotations[deltav1.AnnotationOperations])
		return holder, nil
	}
	// Locks keyed by storage location live in the manager's namespace under hashed names; the table's
	// status names the live Job that holds it.
	if t.Status.ActiveJob == "" {
		fmt.Fprintln(out, "  free: no Job runs on the table")
		return "", nil
	}
	var job batchv1.Job
	err := o.client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Status.ActiveJob}, &job)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("get the table's active Job %s: %w", t.Status.ActiveJob, err)
	}
	if err != nil || jobDone(&job) {
		fmt.Fprintf(out, "  free: the last active Job %s has ended\n", t.Status.ActiveJob)
		return "", nil
	}
	fmt.Fprintf(out, "  held by running Job %s (%s), the table's active Job\n", job.Name, job.Annotations[deltav1.AnnotationOperations])
	return job.Name, nil
}

// queueLine prints where a waiting run stands in the manager's Job admission queue (status.queue) and
// returns the reason for "Why:", or "" when nothing waits.
func (o *Options) queueLine(out io.Writer, indent, what string, q *deltav1.QueueStatus) string {
	if q == nil {
		return ""
	}
	since := ""
	if q.Since != nil {
		since = ", first queued " + o.age(q.Since.Time)
	}
	line := fmt.Sprintf("%s is queued for a worker Job slot: position %d of %d%s", what, q.Position, q.Length, since)
	fmt.Fprintln(out, indent+line)
	return line + " (the manager caps running worker Jobs: --max-running-jobs)"
}

func jobDone(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == "True" {
			return true
		}
	}
	return false
}

// explainPolicy prints one targeting policy's view of the table and returns its reasons.
func (o *Options) explainPolicy(out io.Writer, p *deltav1.OptimizePolicy, t *deltav1.DeltaTable, holder string) []string {
	ph := healthOf(p.Generation, p.Status.ObservedGeneration, p.Status.Conditions, p.Spec.Suspend)
	sched := "no schedule (run-now requests only)"
	if p.Spec.Schedule != "" {
		sched = fmt.Sprintf("schedule %q", p.Spec.Schedule)
		if p.Status.NextScheduleTime != nil {
			sched += ", next slot " + p.Status.NextScheduleTime.UTC().Format(time.RFC3339)
		}
	}
	fmt.Fprintf(out, "  optimizepolicy/%s: %s (%s); %s\n", p.Name, ph.Word, ph.Reason, sched)
	fmt.Fprintf(out, "    policy: %s\n", oneLine(ph.Message, 200))
	var why []string
	if p.Spec.Suspend {
		why = append(why, "policy "+p.Name+" is suspended: its slots do not run (run-now requests still do)")
	}
	d := controllers.EvaluateTriggers(p.Spec.Triggers, t)
	verdict := "a slot would skip it"
	if d.Run {
		verdict = "a slot would run it"
	}
	if d.Wait {
		verdict = "a slot waits"
	}
	fmt.Fprintf(out, "    triggers: %s (%s): %s\n", verdict, d.Reason, d.Message)
	if w := o.queueLine(out, "    ", "policy "+p.Name+"'s first waiting run", p.Status.Queue); w != "" {
		why = append(why, w)
	}
	for _, ts := range p.Status.Targets {
		if ts.Table != t.Name {
			continue
		}
		if r := ts.LastRun; r != nil {
			fmt.Fprintf(out, "    last run here: %s %s (%s): %s\n", r.Result, o.age(r.When()), dash(r.Reason), oneLine(r.Message, 160))
			if r.Result == deltav1.RunSkipped {
				why = append(why, fmt.Sprintf("policy %s skipped the table's last slot (%s): %s", p.Name, r.Reason, oneLine(r.Message, 120)))
			}
		}
		if ts.PendingSince != nil {
			wait := "the table's lock"
			if holder != "" {
				wait = "the lock held by Job " + holder
			}
			fmt.Fprintf(out, "    pending since %s: a due run waits for %s or a free Job slot\n", o.age(ts.PendingSince.Time), wait)
			why = append(why, fmt.Sprintf("policy %s has a run due since %s waiting for %s (or the manager's Job queue)",
				p.Name, ts.PendingSince.UTC().Format(time.RFC3339), wait))
		}
	}
	if _, waiting, ok := strings.Cut(ph.Message, "waiting:"); ok {
		why = append(why, "policy "+p.Name+" reports waiting:"+oneLine(waiting, 160))
	}
	if !p.Spec.Suspend && p.Spec.Schedule != "" && !d.Run && !d.Wait {
		why = append(why, fmt.Sprintf("policy %s's triggers are not crossed (%s), so its slots skip the table", p.Name, d.Message))
	}
	if d.Wait {
		why = append(why, "the table has not been inspected yet: policies wait for the first inspection")
	}
	return why
}

func lastMaintenance(runs []deltav1.RunRecord) *deltav1.RunRecord {
	for i := range runs {
		if !runs[i].HasOperation(deltav1.OperationInspect) {
			return &runs[i]
		}
	}
	return nil
}

func opsOf(r *deltav1.RunRecord) string {
	ops := make([]string, 0, len(r.Operations))
	for _, op := range r.Operations {
		ops = append(ops, string(op))
	}
	return dash(strings.Join(ops, ","))
}
