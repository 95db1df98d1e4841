package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func newStatusCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "The tables, policies and streams of a namespace and their health",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.status(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list every namespace")
	return cmd
}

func (o *Options) status(ctx context.Context) error {
	var tables deltav1.DeltaTableList
	var policies deltav1.OptimizePolicyList
	var streams deltav1.StreamIngestList
	if err := o.client.List(ctx, &tables, o.listNamespace()...); err != nil {
		return fmt.Errorf("list DeltaTables: %w", err)
	}
	if err := o.client.List(ctx, &policies, o.listNamespace()...); err != nil {
		return fmt.Errorf("list OptimizePolicies: %w", err)
	}
	if err := o.client.List(ctx, &streams, o.listNamespace()...); err != nil {
		return fmt.Errorf("list StreamIngests: %w", err)
	}
	if len(tables.Items)+len(policies.Items)+len(streams.Items) == 0 {
		where := "namespace " + o.ns
		if o.allNamespaces {
			where = "any namespace"
		}
		fmt.Fprintf(o.Out, "No DeltaTables, OptimizePolicies or StreamIngests in %s.\n", where)
		return nil
	}
	color := o.colorOn()
	counts := map[string]int{}
	section := func(title string, header string, rows func(w io.Writer)) {
		fmt.Fprintln(o.Out, title)
		w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, o.nsHeader()+header)
		rows(w)
		_ = w.Flush()
		fmt.Fprintln(o.Out)
	}
	if len(tables.Items) > 0 {
		section("DELTATABLES", "NAME\tHEALTH\tVERSION\tFILES\tSMALL\tSIZE\tACTIVE JOB\tLAST RUN\tMESSAGE", func(w io.Writer) {
			for i := range tables.Items {
				t := &tables.Items[i]
				h := healthOf(t.Generation, t.Status.ObservedGeneration, t.Status.Conditions, false)
				counts[h.Word]++
				version := "-"
				if t.Status.Version != nil {
					version = fmt.Sprint(*t.Status.Version)
				}
				fmt.Fprintf(w, "%s%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", o.nsCell(t.Namespace), t.Name, paint(color, h), version,
					t.Status.NumFiles, t.Status.NumSmallFiles, humanBytes(t.Status.SizeBytes), dash(t.Status.ActiveJob),
					o.lastRun(t.Status.RecentRuns, true), oneLine(h.Reason+": "+h.Message, 80))
			}
		})
	}
	if len(policies.Items) > 0 {
		section("OPTIMIZEPOLICIES", "NAME\tHEALTH\tSCHEDULE\tTABLES\tRUNNING\tNEXT\tLAST RUN\tMESSAGE", func(w io.Writer) {
			for i := range policies.Items {
				p := &policies.Items[i]
				h := healthOf(p.Generation, p.Status.ObservedGeneration, p.Status.Conditions, p.Spec.Suspend)
				counts[h.Word]++
				next := "-"
				if p.Status.NextScheduleTime != nil {
					next = o.age(p.Status.NextScheduleTime.Time)
				}
				fmt.Fprintf(w, "%s%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", o.nsCell(p.Namespace), p.Name, paint(color, h), dash(p.Spec.Schedule),
					p.Status.NumTargets, len(p.Status.Active), next, o.lastRun(p.Status.RecentRuns, false), oneLine(h.Reason+": "+h.Message, 80))
			}
		})
	}
	if len(streams.Items) > 0 {
		section("STREAMINGESTS", "NAME\tHEALTH\tTARGET\tLAST BATCH\tBACKLOG\tACTIVE JOB\tMESSAGE", func(w io.Writer) {
			for i := range streams.Items {
				s := &streams.Items[i]
				h := healthOf(s.Generation, s.Status.ObservedGeneration, s.Status.Conditions, s.Spec.Suspend)
				counts[h.Word]++
				batch, backlog := "-", "-"
				if s.Status.LastBatchID != nil {
					batch = fmt.Sprint(*s.Status.LastBatchID)
				}
				if b := s.Status.Backlog; b != nil {
					backlog = fmt.Sprintf("%d files, %s", b.Files, humanBytes(b.Bytes))
				}
				fmt.Fprintf(w, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.nsCell(s.Namespace), s.Name, paint(color, h), s.Spec.Target, batch, backlog,
					dash(s.Status.ActiveJob), oneLine(h.Reason+": "+h.Message, 80))
			}
		})
	}
	var summary []string
	for _, word := range []string{"Ready", "Reconciling", "Suspended", "NotReady", "Degraded", "Failing", "Stalled"} {
		if n := counts[word]; n > 0 {
			summary = append(summary, fmt.Sprintf("%d %s", n, word))
		}
	}
	fmt.Fprintln(o.Out, "Health: "+strings.Join(summary, ", "))
	return nil
}

func (o *Options) nsHeader() string {
	if o.allNamespaces {
		return "NAMESPACE\t"
	}
	return ""
}

func (o *Options) nsCell(ns string) string {
	if o.allNamespaces {
		return ns + "\t"
	}
	return ""
}

// lastRun summarises the newest finished run of a history (maintenance only for tables).
func (o *Options) lastRun(runs []deltav1.RunRecord, skipInspect bool) string {
	for _, r := range runs {
		if !r.IsFinished() || skipInspect && r.HasOperation(deltav1.OperationInspect) {
			continue
		}
		return fmt.Sprintf("%s %s", r.Result, o.age(r.When()))
	}
	return "-"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine shortens a message to one line of at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
