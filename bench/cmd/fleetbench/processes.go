package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// child is a process the benchmark started and stops.
type child struct {
	cmd         *exec.Cmd
	metricsAddr string
}

func (c *child) stop() time.Duration {
	if c.cmd.Process == nil {
		return 0
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = c.cmd.Process.Kill()
		<-done
	}
	if st := c.cmd.ProcessState; st != nil {
		return st.UserTime() + st.SystemTime()
	}
	return 0
}

// peakRSSMiB is the process's high-water mark of resident memory (VmHWM).
func (c *child) peakRSSMiB() float64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startControllerManager runs kube-controller-manager's Job and garbage-collector controllers.
func startControllerManager(_ context.Context, assets, kubeconfig, dir string) (*child, error) {
	logf, err := os.Create(filepath.Join(dir, "kube-controller-manager.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig="+kubeconfig, "--controllers=job-controller,garbage-collector-controller",
		"--leader-elect=false", "--secure-port=0", "--use-service-account-credentials=false",
		"--concurrent-job-syncs=20", "--kube-api-qps=500", "--kube-api-burst=1000")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kube-controller-manager from %s: %w", assets, err)
	}
	return &child{cmd: cmd}, nil
}

// startManager runs `deltakeeper manager` against kubeconfig with plain-HTTP metrics on a free port.
func startManager(binary, kubeconfig, extra, dir, name string, limitMiB int) (*child, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"manager", "--leader-elect=false", "--metrics-bind-address=" + addr, "--metrics-secure=false",
		"--health-probe-bind-address=0", "--worker-image=deltakeeper:fleetbench"}
	args = append(args, strings.Fields(extra)...)
	cmd := exec.Command(binary, args...)
	// The container limit (the chart's is 256Mi): the manager sets its soft limit from it as in a pod.
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "DELTAKEEPER_MEMORY_LIMIT="+strconv.Itoa(limitMiB<<20))
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	return &child{cmd: cmd, metricsAddr: addr}, nil
}

// reconciles sums controller_runtime_reconcile_total per controller from the manager's metrics.
func (c *child) reconciles() (map[string]int, error) {
	resp, err := http.Get("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]int{}
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		rest, ok := strings.CutPrefix(line, `controller_runtime_reconcile_total{controller="`)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, `"`)
		fields := strings.Fields(line)
		v, _ := strconv.ParseFloat(fields[len(fields)-1], 64)
		out[name] += int(v)
	}
	return out, s.Err()
}

// gauge reads one unlabelled metric from the manager's metrics, 0 when absent.
func (c *child) gauge(name string) float64 {
	resp, err := http.Get("http://" + c.metricsAddr + "/metrics")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), name+" "); ok {
			v, _ := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v
		}
	}
	return 0
}

// waitReconciled waits until each controller reconciled at least want objects.
func (c *child) waitReconciled(ctx context.Context, want map[string]int, deadline time.Time) error {
	var last map[string]int
	for time.Now().Before(deadline) {
		got, err := c.reconciles()
		if err == nil {
			last = got
			done := true
			for k, n := range want {
				done = done && got[k] >= n
			}
			if done {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("the manager did not reconcile every object in time: %v, want %v", last, want)
}
