// Command controlplane starts a local Kubernetes control plane (kube-apiserver + etcd built by
// hack/build-k8s.sh) with the deltakeeper CRDs installed, writes a kubeconfig, and either runs a command
// against it (`controlplane -- kubectl get …`) or waits until interrupted. It has no kubelet: objects are
// stored and validated, Jobs are not run; the e2e cluster (hack/cluster-up.sh) runs them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

func main() {
	kubeconfig := flag.String("out-kubeconfig", filepath.Join(os.TempDir(), "deltakeeper-controlplane.kubeconfig"), "where to write the kubeconfig")
	flag.Parse()
	if err := run(*kubeconfig, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
}

func run(kubeconfigPath string, command []string) error {
	env, err := testutil.NewEnvironment()
	if err != nil {
		return err
	}
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("start control plane: %w", err)
	}
	defer func() { _ = env.Stop() }()
	user, err := env.AddUser(crenvtest.User{Name: "demo-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfigPath, kubeconfig, 0o600); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "control plane up: KUBECONFIG=%s (CRDs installed)\n", kubeconfigPath)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(command) == 0 {
		<-ctx.Done()
		return nil
	}
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath, "PATH="+env.BinaryAssetsDirectory+":"+os.Getenv("PATH"))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
