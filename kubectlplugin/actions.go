package kubectlplugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Object kinds as a person types them: kubectl's resource names, short names and the plain words.
const (
	kindTable  = "deltatable"
	kindPolicy = "optimizepolicy"
	kindStream = "streamingest"
)

var kindAliases = map[string]string{
	"deltatable": kindTable, "deltatables": kindTable, "dt": kindTable, "table": kindTable,
	"optimizepolicy": kindPolicy, "optimizepolicies": kindPolicy, "op": kindPolicy, "optpol": kindPolicy, "policy": kindPolicy,
	"streamingest": kindStream, "streamingests": kindStream, "si": kindStream, "ingest": kindStream, "stream": kindStream,
}

// parseRef splits KIND/NAME; a bare NAME is of kind def.
func parseRef(arg, def string) (kind, name string, err error) {
	k, n, ok := strings.Cut(arg, "/")
	if !ok {
		return def, arg, nil
	}
	kind, known := kindAliases[strings.ToLower(strings.TrimSuffix(k, ".deltakeeper.io"))]
	if !known || n == "" {
		return "", "", fmt.Errorf("%q: want optimizepolicy/NAME, deltatable/NAME or streamingest/NAME", arg)
	}
	return kind, n, nil
}

// LabelRunNowOf marks the one-table policies `run deltatable/NAME` creates, with the policy they copy.
const LabelRunNowOf = "deltakeeper.io/run-now-of"

func newRunCommand(o *Options) *cobra.Command {
	var policy, request string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "run (optimizepolicy/NAME | deltatable/NAME)",
		Short: "Run a policy on all its tables now, or one table with a policy's steps",
		Long: "run optimizepolicy/NAME (or just NAME) sets the policy's deltakeeper.io/run-now annotation: one run on every\n" +
			"target now, whatever the schedule and triggers say.\n\n" +
			"run deltatable/NAME runs one table now with the steps of the policy that targets it (--policy when several\n" +
			"do): it keeps an unscheduled copy of that policy targeting only the table, named <policy>-now-<table>\n" +
			"and owned by the policy, and sets the copy's run-now annotation. The copy's status holds the run.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseRef(args[0], kindPolicy)
			if err != nil {
				return err
			}
			if request == "" {
				request = o.Now().UTC().Format(time.RFC3339Nano)
			}
			ctx := cmd.Context()
			var target string
			switch kind {
			case kindPolicy:
				target = name
			case kindTable:
				if target, err = o.oneTablePolicy(ctx, name, policy); err != nil {
					return err
				}
			default:
				return fmt.Errorf("a StreamIngest runs by itself: resume it (suspend/resume), or change its trigger")
			}
			if err := o.requestRunNow(ctx, target, request); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "optimizepolicy/%s: run-now requested (%s=%s)\n", target, deltav1.AnnotationRunNow, request)
			if wait > 0 {
				return o.waitRunNow(ctx, target, request, wait)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&policy, "policy", "", "for deltatable/NAME: the policy whose steps to run (default: the one policy targeting the table)")
	cmd.Flags().StringVar(&request, "request", "", "the run-now request's value (default: the current time)")
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait this long for the controller to start the run")
	return cmd
}

func (o *Options) requestRunNow(ctx context.Context, policy, request string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{deltav1.AnnotationRunNow: request}}})
	if err != nil {
		return err
	}
	p := &deltav1.OptimizePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: policy}}
	if err := o.client.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("request a run of optimizepolicy %s/%s: %w", o.ns, policy, err)
	}
	return nil
}

func (o *Options) waitRunNow(ctx context.Context, policy, request string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var p deltav1.OptimizePolicy
		if err := o.get(ctx, policy, &p); err != nil {
			return err
		}
		if p.Status.LastRunNow == request {
			fmt.Fprintf(o.Out, "optimizepolicy/%s: the run started: %s\n", policy, strings.Join(p.Status.Active, ", "))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("optimizepolicy %s/%s has not started run-now request %s within %s; `explain` shows why", o.ns, policy, request, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// oneTablePolicy creates or refreshes the unscheduled one-table copy of the policy that targets table, and
// returns its name.
func (o *Options) oneTablePolicy(ctx context.Context, table, policy string) (string, error) {
	var dt deltav1.DeltaTable
	if err := o.get(ctx, table, &dt); err != nil {
		return "", err
	}
	var src deltav1.OptimizePolicy
	if policy == "" {
		var list deltav1.OptimizePolicyList
		if err := o.client.List(ctx, &list, client.InNamespace(o.ns)); err != nil {
			return "", fmt.Errorf("list OptimizePolicies: %w", err)
		}
		var names []string
		for _, p := range list.Items {
			if p.Labels[LabelRunNowOf] == "" && targets(&p, table) {
				names = append(names, p.Name)
				src = p
			}
		}
		switch len(names) {
		case 0:
			return "", fmt.Errorf("no OptimizePolicy in %s targets table %s: name one with --policy", o.ns, table)
		case 1:
		default:
			return "", fmt.Errorf("table %s is a target of %s: choose one with --policy", table, strings.Join(names, ", "))
		}
	} else if err := o.get(ctx, policy, &src); err != nil {
		return "", err
	}
	name := oneTableName(src.Name, table)
	spec := *src.Spec.DeepCopy()
	spec.Targets = deltav1.PolicyTargets{TableNames: []string{table}}
	spec.Schedule, spec.Suspend = "", false
	copyPolicy := &deltav1.OptimizePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name}}
	var existing deltav1.OptimizePolicy
	err := o.client.Get(ctx, client.ObjectKeyFromObject(copyPolicy), &existing)
	switch {
	case apierrors.IsNotFound(err):
		copyPolicy.Labels = map[string]string{LabelRunNowOf: labelValue(src.Name)}
		copyPolicy.OwnerReferences = []metav1.OwnerReference{{APIVersion: deltav1.GroupVersion.String(), Kind: "OptimizePolicy",
			Name: src.Name, UID: src.UID, BlockOwnerDeletion: ptr.To(false)}}
		copyPolicy.Spec = spec
		if err := o.client.Create(ctx, copyPolicy); err != nil {
			return "", fmt.Errorf("create the one-table policy %s/%s: %w", o.ns, name, err)
		}
		fmt.Fprintf(o.Out, "optimizepolicy/%s: created, the steps of %s on table %s only\n", name, src.Name, table)
	case err != nil:
		return "", fmt.Errorf("get optimizepolicy %s/%s: %w", o.ns, name, err)
	default:
		if existing.Labels[LabelRunNowOf] == "" {
			return "", fmt.Errorf("optimizepolicy %s/%s exists and was not made by `run`: leaving it alone", o.ns, name)
		}
		existing.Spec = spec
		if err := o.client.Update(ctx, &existing); err != nil {
			return "", fmt.Errorf("refresh the one-table policy %s/%s from %s: %w", o.ns, name, src.Name, err)
		}
	}
	return name, nil
}

// targets reports whether the policy's resolved targets (its status) or its named tables include table.
func targets(p *deltav1.OptimizePolicy, table string) bool {
	if slices.Contains(p.Spec.Targets.TableNames, table) {
		return true
	}
	return slices.ContainsFunc(p.Status.Targets, func(t deltav1.TargetStatus) bool { return t.Table == table })
}

// oneTableName is <policy>-now-<table>, hashed down to 63 characters (Job and label names derive from it).
func oneTableName(policy, table string) string {
	name := policy + "-now-" + table
	if len(name) <= 63 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return strings.TrimRight(name[:52], "-.") + "-" + hex.EncodeToString(sum[:])[:10]
}

func labelValue(s string) string {
	if len(s) <= 63 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return strings.TrimRight(s[:52], "-._") + "-" + hex.EncodeToString(sum[:])[:10]
}

func newSuspendCommand(o *Options, suspend bool) *cobra.Command {
	verb, what := "suspend", "Stop new scheduled runs of a policy or new Jobs of a stream (running Jobs finish)"
	if !suspend {
		verb, what = "resume", "Resume a suspended policy or stream"
	}
	return &cobra.Command{
		Use:   verb + " (optimizepolicy/NAME | streamingest/NAME)",
		Short: what,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, name, err := parseRef(args[0], "")
			if err != nil {
				return err
			}
			var obj client.Object
			switch kind {
			case kindPolicy:
				obj = &deltav1.OptimizePolicy{}
			case kindStream:
				obj = &deltav1.StreamIngest{}
			case kindTable:
				return fmt.Errorf("a DeltaTable has no schedule of its own: %s the policies that target it", verb)
			default:
				return fmt.Errorf("%q: want optimizepolicy/NAME or streamingest/NAME", args[0])
			}
			obj.SetNamespace(o.ns)
			obj.SetName(name)
			patch := []byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, suspend))
			if err := o.client.Patch(cmd.Context(), obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
				return fmt.Errorf("%s %s %s/%s: %w", verb, kind, o.ns, name, err)
			}
			fmt.Fprintf(o.Out, "%s/%s %sed\n", kind, name, strings.TrimSuffix(verb, "e"))
			return nil
		},
	}
}
