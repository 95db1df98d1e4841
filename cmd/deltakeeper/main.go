// Command deltakeeper is the one binary of the project: the Kubernetes manager (`deltakeeper manager`), the
// worker that Jobs run (`deltakeeper worker <command>`, also callable as `deltakeeper <command>` on a local
// table with no cluster at all), `deltakeeper version`, and the kubectl plugin: `deltakeeper kubectl …`, or
// the binary installed as kubectl-deltakeeper (krew does), which kubectl runs as `kubectl deltakeeper …`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/cmd/deltakeeper/internal/initgc"
	"github.com/deltakeeper/deltakeeper/kubectlplugin"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The collector was paused while the libraries initialized (initgc); package main initializes last,
// also in its test binary.
func init() { initgc.Restore() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := rootFor(os.Args[0]).ExecuteContext(ctx)
	stop() // before os.Exit, which runs no deferred calls
	os.Exit(exitCode(err))
}

// rootFor picks the command tree by the name the binary was run as: kubectl runs `kubectl deltakeeper` as
// kubectl-deltakeeper.
func rootFor(argv0 string) *cobra.Command {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") == kubectlplugin.PluginName {
		return kubectlplugin.NewCommand("deltakeeper", "kubectl deltakeeper", &kubectlplugin.Options{})
	}
	return newRootCommand()
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "deltakeeper",
		Short: "Keep Delta Lake tables fast and healthy",
		Long: "deltakeeper is a Kubernetes operator and a command-line tool that compacts, clusters, vacuums and\ncheckpoints Delta Lake tables on S3 or local disk.\n\n" +
			result.ExitCodesHelp(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newManagerCommand(), newVersionCommand(), kubectlCommand())
	addWorkerCommands(root)
	return root
}

// exitCode maps an error to the process exit code and prints it; worker commands define their own codes.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var coded interface{ ExitCode() int }
	if errors.As(err, &coded) {
		return coded.ExitCode()
	}
	fmt.Fprintln(os.Stderr, "Error:", err)
	return 1
}

// kubectlCommand is the kubectl plugin under `deltakeeper kubectl`, for a binary not installed as
// kubectl-deltakeeper.
func kubectlCommand() *cobra.Command {
	cmd := kubectlplugin.NewCommand("kubectl", "deltakeeper kubectl", &kubectlplugin.Options{})
	cmd.Short = "The kubectl plugin (kubectl deltakeeper): status, run, suspend, resume, history, explain"
	return cmd
}
