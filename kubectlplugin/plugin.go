// Package kubectlplugin is `kubectl deltakeeper`: a person's view of the tables, policies and streams in a
// namespace (status, history, explain) and the few actions a person takes on them (run now, suspend,
// resume). It reads only what the API server holds: the objects' status and conditions, the worker Jobs and
// the tables' lock Leases; it never reads tables. The deltakeeper binary runs it when invoked as
// kubectl-deltakeeper (krew installs it under that name) or as `deltakeeper kubectl …`.
package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/bytesize"
)

// PluginName is the executable name kubectl looks for on PATH (`kubectl deltakeeper` runs it).
const PluginName = "kubectl-deltakeeper"

// Options are what the commands share: where output goes, the cluster, the clock.
type Options struct {
	Out, ErrOut io.Writer
	// Color forces colour on or off; nil decides from Out (a terminal, and NO_COLOR unset).
	Color *bool
	// Now is the clock for ages in the output (time.Now when nil).
	Now func() time.Time

	kubeconfig, kubeContext, namespace string
	allNamespaces                      bool
	client                             client.Client
	ns                                 string
}

// NewCommand returns the plugin's root command named use, shown as display in the usage text ("kubectl
// deltakeeper" for the plugin, "deltakeeper kubectl" for the subcommand).
func NewCommand(use, display string, o *Options) *cobra.Command {
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.ErrOut == nil {
		o.ErrOut = os.Stderr
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	root := &cobra.Command{
		Use:   use,
		Short: "See and steer deltakeeper's tables, policies and streams",
		Long: "The health of deltakeeper's DeltaTables, OptimizePolicies and StreamIngests in a namespace, what each\n" +
			"run did and why a run did or did not happen; run a policy or one table now, suspend and resume.",
		SilenceUsage:      true,
		SilenceErrors:     true,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: display},
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return o.connect()
		},
	}
	f := root.PersistentFlags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.kubeContext, "context", "", "the kubeconfig context to use")
	f.StringVarP(&o.namespace, "namespace", "n", "", "the namespace (default: the context's)")
	root.AddCommand(newStatusCommand(o), newRunCommand(o), newSuspendCommand(o, true), newSuspendCommand(o, false),
		newHistoryCommand(o), newExplainCommand(o))
	return root
}

// connect builds the client from the kubeconfig flags, as kubectl does.
func (o *Options) connect() error {
	if o.client != nil {
		return nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.kubeconfig != "" {
		rules.ExplicitPath = o.kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.kubeContext}
	if o.namespace != "" {
		overrides.Context.Namespace = o.namespace
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return fmt.Errorf("load the kubeconfig (set --kubeconfig or KUBECONFIG): %w", err)
	}
	if o.ns, _, err = cc.Namespace(); err != nil {
		return fmt.Errorf("find the namespace: %w", err)
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{deltav1.AddToScheme, batchv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	if o.client, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return fmt.Errorf("connect to the API server: %w", err)
	}
	return nil
}

// listNamespace is the namespace to list in ("" with --all-namespaces).
func (o *Options) listNamespace() []client.ListOption {
	if o.allNamespaces {
		return nil
	}
	return []client.ListOption{client.InNamespace(o.ns)}
}

func (o *Options) get(ctx context.Context, name string, obj client.Object) error {
	if err := o.client.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: name}, obj); err != nil {
		return fmt.Errorf("get %s %s/%s: %w", kindName(obj), o.ns, name, err)
	}
	return nil
}

func kindName(obj client.Object) string {
	switch obj.(type) {
	case *deltav1.DeltaTable:
		return "DeltaTable"
	case *deltav1.OptimizePolicy:
		return "OptimizePolicy"
	case *deltav1.StreamIngest:
		return "StreamIngest"
	}
	return fmt.Sprintf("%T", obj)
}

// colorOn decides whether to colour the output: only on a terminal, never with NO_COLOR set.
func (o *Options) colorOn() bool {
	if o.Color != nil {
		return *o.Color
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	f, ok := o.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// age renders how far t is from now, as kubectl does: "5m ago", "3h ago", or "in 2d" for a future time
// (a next slot, or a controller clock ahead of this machine's).
func (o *Options) age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := o.Now().Sub(t)
	if d < 0 {
		return "in " + shortDuration(-d)
	}
	return shortDuration(d) + " ago"
}

func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// humanBytes renders a byte count the way every deltakeeper command prints sizes ("3.0 MiB").
func humanBytes(n int64) string { return bytesize.Format(n) }
