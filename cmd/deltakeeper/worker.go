package main

import "github.com/spf13/cobra"

// addWorkerCommands registers the table commands twice: at the top level for people
// (`deltakeeper inspect ./orders`) and under `worker` for Jobs (`deltakeeper worker inspect s3://…`), so a Job's
// command line reads as what it is.
func addWorkerCommands(root *cobra.Command) {
	worker := &cobra.Command{
		Use:   "worker",
		Short: "Table commands as run by the operator's Jobs (same as the top-level table commands)",
	}
	for _, newCmd := range workerCommands() {
		root.AddCommand(newCmd())
		worker.AddCommand(newCmd())
	}
	root.AddCommand(worker)
}

// workerCommands lists the constructors of the table commands.
func workerCommands() []func() *cobra.Command {
	return nil
}
