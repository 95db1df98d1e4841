package main

import (
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
	}
	for _, newCmd := range cli.Constructors() {
		root.AddCommand(newCmd(cli.Interactive))
		worker.AddCommand(newCmd(cli.Job))
	}
	root.AddCommand(worker)
}
