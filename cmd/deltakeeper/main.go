// Command deltakeeper is the one binary of the project: the Kubernetes manager (`deltakeeper manager`), the
// worker that Jobs run (`deltakeeper worker <command>`, also callable as `deltakeeper <command>` on a local
// table with no cluster at all) and `deltakeeper version`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	root := newRootCommand()
	err := root.ExecuteContext(ctx)
	stop() // before os.Exit, which runs no deferred calls
	os.Exit(exitCode(err))
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
	root.AddCommand(newManagerCommand(), newVersionCommand())
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
