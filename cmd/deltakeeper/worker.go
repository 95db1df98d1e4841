package main

import (
	"math"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/cli"
)

// addWorkerCommands registers the table commands twice: at the top level for people
// (`deltakeeper inspect ./orders`) and under `worker` for Jobs (`deltakeeper worker inspect s3://…`), so a Job's
// command line reads as what it is. Under `worker`, "nothing to do" exits 0 because a Job cannot count any
// other exit code as success; the JSON result still says nothing_to_do.
func addWorkerCommands(root *cobra.Command) {
	worker := &cobra.Command{
		Use:   "worker",
		Short: "Table commands as run by the operator's Jobs (same as the top-level table commands)",
		PersistentPreRun: func(*cobra.Command, []string) {
			keepMemoryHeadroom()
		},
	}
	for _, newCmd := range cli.Constructors() {
		root.AddCommand(newCmd(cli.Interactive))
		worker.AddCommand(newCmd(cli.Job))
	}
	root.AddCommand(worker)
}

// keepMemoryHeadroom lowers the Go soft memory limit to 90% of GOMEMLIMIT. Jobs set GOMEMLIMIT to the
// container's memory limit (downward API); collecting only at the very limit leaves no room for the
// memory the runtime cannot reclaim in time, and the kernel would OOM-kill the pod instead.
func keepMemoryHeadroom() {
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		debug.SetMemoryLimit(limit / 10 * 9)
	}
}
