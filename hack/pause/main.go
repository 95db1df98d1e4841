// Command pause is the sandbox ("infra") container of the e2e cluster's pods: it holds the pod's
// namespaces open, reaps orphaned children and exits on SIGTERM or SIGINT. Upstream's pause image cannot be
// pulled on CI machines, so hack/cluster-up.sh builds this one and imports it into containerd.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		reapChildren()
	}
}

// reapChildren collects every exited child so that processes re-parented to the sandbox do not linger as
// zombies.
func reapChildren() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if pid <= 0 || err != nil {
			return
		}
	}
}
