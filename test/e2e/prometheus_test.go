//go:build e2e

package e2e

// A real Prometheus on the host (Debian's prometheus package, hack/install-host-deps.sh) scraping the
// manager on the cluster, for the monitoring phase: it starts with the shipped alert rules (their `for:`
// shortened so that the test does not wait minutes), and the tests ask it questions over its HTTP API.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// monitoringDir holds the shipped rules and dashboard, relative to test/e2e.
const monitoringDir = "../../config/monitoring"

// hostPrometheus is a running Prometheus process and its API address.
type hostPrometheus struct {
	url string
	log string
}

// startPrometheus writes a config that scrapes target (host:port of the manager's HTTPS metrics endpoint)
// every 2s as job "deltakeeper" with the bearer token in tokenFile, loads the shipped rules with every `for:`
// set to forDuration and a 2s evaluation interval, checks it with promtool and starts Prometheus on a free
// loopback port. The process is stopped when the test ends.
func startPrometheus(t *testing.T, target, tokenFile string, forDuration time.Duration) *hostPrometheus {
	t.Helper()
	bin, promtool := hostBinary(t, "DELTAKEEPER_PROMETHEUS", "prometheus"), hostBinary(t, "DELTAKEEPER_PROMTOOL", "promtool")
	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join(monitoringDir, "deltakeeper.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	short := regexp.MustCompile(`(?m)^(\s+for:) .*$`).ReplaceAll(rules, []byte("${1} "+forDuration.String()))
	rulesFile := filepath.Join(dir, "deltakeeper.rules.yaml")
	writeFile(t, rulesFile, short)
	config := fmt.Sprintf(`global: {scrape_interval: 2s, evaluation_interval: 2s}
rule_files: [%s]
scrape_configs:
- job_name: deltakeeper
  scheme: https
  metrics_path: /metrics
  authorization: {credentials_file: %s}
  tls_config: {insecure_skip_verify: true}
  static_configs: [{targets: ['%s']}]
`, rulesFile, tokenFile, target)
	configFile := filepath.Join(dir, "prometheus.yml")
	writeFile(t, configFile, []byte(config))
	if out, err := exec.Command(promtool, "check", "config", configFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check config: %v\n%s", err, out)
	}

	addr := freeLoopbackAddr(t)
	logFile := filepath.Join(dir, "prometheus.log")
	logOut, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+configFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=info")
	cmd.Stdout, cmd.Stderr = logOut, logOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	p := &hostPrometheus{url: "http://" + addr, log: logFile}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logOut.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logFile)
			t.Logf("---- prometheus log\n%s", tail(string(out), 60))
		}
	})
	waitFor(t, time.Minute, "Prometheus to be ready", func() (bool, string, error) {
		resp, err := http.Get(p.url + "/-/ready")
		if err != nil {
			return false, "", err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status, nil
	})
	return p
}

// promSeries is one series of a query result: its labels (values are not looked at).
type promSeries struct {
	Metric map[string]string `json:"metric"`
}

// query evaluates expr now (or, with window > 0, as a range query over the last window at a 2s step) and
// returns its series; a query the server rejects is an error.
func (p *hostPrometheus) query(expr string, window time.Duration) ([]promSeries, error) {
	v := url.Values{"query": {expr}}
	path := "/api/v1/query"
	if window > 0 {
		now := time.Now()
		path = "/api/v1/query_range"
		v.Set("start", fmt.Sprint(now.Add(-window).Unix()))
		v.Set("end", fmt.Sprint(now.Unix()))
		v.Set("step", "2")
	}
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []promSeries `json:"result"`
		} `json:"data"`
	}
	if err := p.get(path+"?"+v.Encode(), &body); err != nil {
		return nil, err
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, body.Error)
	}
	return body.Data.Result, nil
}

// promAlert is an alert as /api/v1/alerts reports it.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"`
}

// alerts returns the pending and firing alerts.
func (p *hostPrometheus) alerts() ([]promAlert, error) {
	var body struct {
		Data struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	err := p.get("/api/v1/alerts", &body)
	return body.Data.Alerts, err
}

// target returns the health and last error of the deltakeeper scrape target.
func (p *hostPrometheus) target() (health, lastError string, err error) {
	var body struct {
		Data struct {
			ActiveTargets []struct {
				Health    string `json:"health"`
				LastError string `json:"lastError"`
			} `json:"activeTargets"`
		} `json:"data"`
	}
	if err := p.get("/api/v1/targets", &body); err != nil {
		return "", "", err
	}
	if len(body.Data.ActiveTargets) != 1 {
		return "", "", fmt.Errorf("%d active targets, want 1", len(body.Data.ActiveTargets))
	}
	tg := body.Data.ActiveTargets[0]
	return tg.Health, tg.LastError, nil
}

func (p *hostPrometheus) get(path string, into any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return fmt.Errorf("GET %s: %s: %w", path, resp.Status, err)
	}
	return nil
}

// hostBinary finds a host program by environment variable or on PATH; a missing one fails the test.
func hostBinary(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("no %s on PATH: run hack/install-host-deps.sh (Debian's prometheus package) or set %s", name, env)
	}
	return p
}

// freeLoopbackAddr returns a 127.0.0.1 address whose port was free a moment ago.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}
