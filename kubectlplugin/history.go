package kubectlplugin

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func newHistoryCommand(o *Options) *cobra.Command {
	return &cobra.Command{
		Use:   "history (TABLE | optimizepolicy/NAME | streamingest/NAME)",
		Short: "Recent runs, newest first, with what each did",
		Long: "The runs the status records: for a DeltaTable its inspect and maintenance runs from any policy, for an\n" +
			"OptimizePolicy its runs and skipped slots, for a StreamIngest its ingest Jobs.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseRef(args[0], kindTable)
			if err != nil {
				return err
			}
			runs, title, err := o.historyOf(cmd.Context(), kind, name)
			if err != nil {
				return err
			}
			o.printRuns(title, runs)
			return nil
		},
	}
}

func (o *Options) historyOf(ctx context.Context, kind, name string) ([]deltav1.RunRecord, string, error) {
	switch kind {
	case kindTable:
		var t deltav1.DeltaTable
		if err := o.get(ctx, name, &t); err != nil {
			return nil, "", err
		}
		return t.Status.RecentRuns, "deltatable/" + name, nil
	case kindPolicy:
		var p deltav1.OptimizePolicy
		if err := o.get(ctx, name, &p); err != nil {
			return nil, "", err
		}
		return p.Status.RecentRuns, "optimizepolicy/" + name, nil
	default:
		var s deltav1.StreamIngest
		if err := o.get(ctx, name, &s); err != nil {
			return nil, "", err
		}
		return s.Status.RecentJobs, "streamingest/" + name, nil
	}
}

func (o *Options) printRuns(title string, runs []deltav1.RunRecord) {
	if len(runs) == 0 {
		fmt.Fprintf(o.Out, "%s: no runs recorded yet\n", title)
		return
	}
	fmt.Fprintf(o.Out, "%s: %d recent runs, newest first\n", title, len(runs))
	w := tabwriter.NewWriter(o.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "AGE\tRESULT\tREASON\tOPERATIONS\tTABLE\tJOB\tFILES -/+\tBYTES -/+\tVERSION\tDURATION\tMESSAGE")
	for _, r := range runs {
		ops := make([]string, 0, len(r.Operations))
		for _, op := range r.Operations {
			ops = append(ops, string(op))
		}
		version, duration := "-", "-"
		if r.TableVersion != nil {
			version = fmt.Sprint(*r.TableVersion)
		}
		if r.StartTime != nil && r.CompletionTime != nil {
			duration = shortDuration(r.CompletionTime.Sub(r.StartTime.Time))
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t-%d/+%d\t-%s/+%s\t%s\t%s\t%s\n", o.age(r.When()), r.Result, dash(r.Reason),
			dash(strings.Join(ops, ",")), dash(r.Table), dash(r.JobName), r.FilesRemoved, r.FilesAdded,
			humanBytes(r.BytesRemoved), humanBytes(r.BytesAdded), version, duration, oneLine(r.Message, 100))
	}
	_ = w.Flush()
}
