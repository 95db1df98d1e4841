package monitoring

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/bargauge"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
	"sigs.k8s.io/yaml"
)

const (
	monitoringDir = "../../config/monitoring"
	runbookPrefix = "https://github.com/deltakeeper/deltakeeper/blob/main/docs/operations.md#"
)

// metricsOfOtherBranches are names fixed in the session's shared contract that another branch adds to the
// manager; the dashboard and alerts use them already. Each is accepted while controllers/ does not define it.
var metricsOfOtherBranches = []string{
	"deltakeeper_worker_jobs_running", "deltakeeper_queue_length", "deltakeeper_queue_oldest_wait_seconds",
}

// The panels issue 17 asks for, by title.
var requiredPanels = []string{
	"Tables by health", "Small files", "Table size", "Skipping effectiveness", "Average depth",
	"Maintenance runs by result", "Run duration", "Time since last successful maintenance", "Queue length",
	"Running worker Jobs", "Ingest lag", "Ingest backlog", "Ingest throughput",
}

func init() {
	rt := cog.NewRuntime()
	rt.RegisterPanelcfgVariant(timeseries.VariantConfig())
	rt.RegisterPanelcfgVariant(bargauge.VariantConfig())
	rt.RegisterDataqueryVariant(prometheus.VariantConfig())
}

func TestDashboard_LoadsStrictlyInGrafanasSchemaWithEveryPanelOnTheDatasourceVariable(t *testing.T) {
	raw := readFile(t, filepath.Join(monitoringDir, "dashboard.json"))
	// The classic dashboard schema on purpose: it is the JSON Grafana's dashboard sidecar and its import
	// dialog load; dashboardv2 is the resource format of Grafana 12's new API.
	var d dashboard.Dashboard //nolint:staticcheck // the shipped JSON is the classic schema; see above
	if err := realError(d.UnmarshalJSONStrict(raw)); err != nil {
		t.Fatalf("dashboard.json does not load in Grafana's dashboard schema: %v", err)
	}
	if err := realError(d.Validate()); err != nil {
		t.Fatalf("dashboard.json fails the schema's validation: %v", err)
	}
	vars := map[string]dashboard.VariableModel{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v
	}
	if ds, ok := vars["datasource"]; !ok || ds.Type != dashboard.VariableTypeDatasource || ds.Query == nil ||
		ds.Query.String == nil || *ds.Query.String != "prometheus" {
		t.Errorf("templating lacks a Prometheus datasource variable named datasource: %+v", vars["datasource"])
	}
	if _, ok := vars["namespace"]; !ok {
		t.Error("templating lacks the namespace variable")
	}
	builtins := []string{"__rate_interval", "__interval", "__range"}
	varRef := regexp.MustCompile(`\$\{?(\w+)`)
	// The panels again, one by one: the SDK's PanelOrRowPanel drops a panel it decoded when the panel's
	// (empty) error list comes back as a typed nil, so Dashboard.Panels holds empty wrappers.
	var rawPanels struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(raw, &rawPanels); err != nil {
		t.Fatal(err)
	}
	if len(rawPanels.Panels) != len(d.Panels) {
		t.Fatalf("%d panels in the JSON, %d decoded", len(rawPanels.Panels), len(d.Panels))
	}
	var titles []string
	ids := map[uint32]bool{}
	for i, rawPanel := range rawPanels.Panels {
		var kind struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(rawPanel, &kind); err != nil {
			t.Fatal(err)
		}
		if kind.Type == "row" {
			var row dashboard.RowPanel
			if err := realError(row.UnmarshalJSONStrict(rawPanel)); err != nil {
				t.Errorf("panel %d (row): %v", i, err)
			}
			continue
		}
		panel := &dashboard.Panel{}
		if err := realError(panel.UnmarshalJSONStrict(rawPanel)); err != nil {
			t.Errorf("panel %d: %v", i, err)
			continue
		}
		title := deref(panel.Title)
		titles = append(titles, title)
		if panel.Id == nil || ids[*panel.Id] {
			t.Errorf("panel %q has a missing or repeated id", title)
		} else {
			ids[*panel.Id] = true
		}
		if panel.GridPos == nil {
			t.Errorf("panel %q has no gridPos", title)
		}
		if !onDatasourceVariable(panel.Datasource) {
			t.Errorf("panel %q uses datasource %+v, want the ${datasource} variable", title, panel.Datasource)
		}
		// The targets as Prometheus queries, strictly, one by one: the panel decoder drops them for the same
		// typed-nil reason.
		var rawTargets struct {
			Targets []json.RawMessage `json:"targets"`
		}
		if err := json.Unmarshal(rawPanel, &rawTargets); err != nil {
			t.Fatal(err)
		}
		if len(rawTargets.Targets) == 0 {
			t.Errorf("panel %q has no query", title)
		}
		for i, rawTarget := range rawTargets.Targets {
			q := &prometheus.Dataquery{}
			if err := realError(q.UnmarshalJSONStrict(rawTarget)); err != nil {
				t.Errorf("panel %q target %d is not a Prometheus query in Grafana's schema: %v", title, i, err)
				continue
			}
			if strings.TrimSpace(q.Expr) == "" || !onDatasourceVariable(q.Datasource) {
				t.Errorf("panel %q target %d: empty expr or not on ${datasource}: %+v", title, i, q)
			}
			for _, m := range varRef.FindAllStringSubmatch(q.Expr, -1) {
				if _, ok := vars[m[1]]; !ok && !slices.Contains(builtins, m[1]) {
					t.Errorf("panel %q query uses $%s, which is neither a dashboard variable nor a Grafana built-in", title, m[1])
				}
			}
		}
	}
	for _, want := range requiredPanels {
		if !slices.Contains(titles, want) {
			t.Errorf("no panel %q (issue 17's list); panels: %v", want, titles)
		}
	}
}

func TestDashboardAndAlerts_QueryOnlyMetricsTheManagerDefines(t *testing.T) {
	defined := definedMetrics(t)
	queries := map[string]string{}
	for where, expr := range dashboardQueries(t) {
		queries["dashboard "+where] = expr
	}
	for _, r := range alertRules(t) {
		queries["alert "+r.Alert] = r.Expr
	}
	metric := regexp.MustCompile(`\bdeltakeeper_[a-z0-9_]+\b`)
	used := map[string]bool{}
	for where, expr := range queries {
		names := metric.FindAllString(expr, -1)
		if len(names) == 0 && !strings.Contains(expr, "up{") {
			t.Errorf("%s queries no metric of the project: %s", where, expr)
		}
		for _, name := range names {
			used[name] = true
			base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
			switch {
			case defined[name] || defined[base]:
			case slices.Contains(metricsOfOtherBranches, name):
				t.Logf("%s uses %s, which another branch adds to the manager (shared contract)", where, name)
			default:
				t.Errorf("%s uses %s, which controllers/ does not define", where, name)
			}
		}
	}
	for _, name := range metricsOfOtherBranches {
		if !used[name] {
			t.Errorf("nothing queries %s, though the dashboard should show it", name)
		}
	}
}

func TestAlerts_HaveASeverityAndARunbookSectionEach(t *testing.T) {
	docs := string(readFile(t, "../../docs/operations.md"))
	var headings []string
	for _, line := range strings.Split(docs, "\n") {
		if h, ok := strings.CutPrefix(line, "### "); ok {
			headings = append(headings, strings.ToLower(strings.TrimSpace(h)))
		}
	}
	rules := alertRules(t)
	if len(rules) < 8 {
		t.Fatalf("%d alerts, want the 8 of issue 17's list", len(rules))
	}
	for _, r := range rules {
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookPrefix)
		if !ok || anchor != strings.ToLower(r.Alert) {
			t.Errorf("alert %s: runbook_url %q, want %s%s", r.Alert, r.Annotations["runbook_url"], runbookPrefix, strings.ToLower(r.Alert))
		}
		if !slices.Contains(headings, anchor) {
			t.Errorf("alert %s: docs/operations.md has no section %q", r.Alert, anchor)
		}
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) || r.Annotations["summary"] == "" {
			t.Errorf("alert %s: severity %q, summary %q", r.Alert, r.Labels["severity"], r.Annotations["summary"])
		}
	}
}

func TestPromtool_AcceptsTheRulesTheirUnitTestsAndAConfigLoadingThem(t *testing.T) {
	promtool := promtoolBinary(t)
	rules, err := filepath.Abs(filepath.Join(monitoringDir, "deltakeeper.rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(promtool, args...)
		cmd.Dir = monitoringDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("check", "rules", "deltakeeper.rules.yaml")
	run("test", "rules", "deltakeeper.rules.test.yaml")
	// The chart's copy and the PrometheusRule carry the same groups (make generate keeps them so).
	run("check", "rules", "../../charts/deltakeeper/files/deltakeeper.rules.yaml")

	// A scrape config like test/e2e's, loading the rules: check config also checks the rule files it names.
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := "global: {scrape_interval: 30s, evaluation_interval: 30s}\n" +
		"rule_files: [" + rules + "]\n" +
		"scrape_configs:\n" +
		"- job_name: deltakeeper\n  scheme: https\n" +
		"  authorization: {credentials_file: " + token + "}\n" +
		"  tls_config: {insecure_skip_verify: true}\n" +
		"  static_configs: [{targets: ['10.77.0.10:8443']}]\n"
	path := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	run("check", "config", path)
}

type alertRule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) []alertRule {
	t.Helper()
	var file struct {
		Groups []struct {
			Name  string      `json:"name"`
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, filepath.Join(monitoringDir, "deltakeeper.rules.yaml")), &file); err != nil {
		t.Fatalf("deltakeeper.rules.yaml: %v", err)
	}
	var rules []alertRule
	for _, g := range file.Groups {
		rules = append(rules, g.Rules...)
	}
	return rules
}

// dashboardQueries maps "panel title / refId" to each query of the dashboard.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				RefID string `json:"refId"`
				Expr  string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(monitoringDir, "dashboard.json")), &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out[p.Title+" / "+q.RefID] = q.Expr
		}
	}
	return out
}

// definedMetrics reads the metric names the manager registers from controllers/*.go.
func definedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("../../controllers/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no controllers/*.go: %v", err)
	}
	name := regexp.MustCompile(`Name:\s+"(deltakeeper_[a-z0-9_]+)"`)
	defined := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, m := range name.FindAllSubmatch(readFile(t, f), -1) {
			defined[string(m[1])] = true
		}
	}
	if len(defined) < 10 {
		t.Fatalf("found only %d metric names in controllers/: %v", len(defined), defined)
	}
	return defined
}

func onDatasourceVariable(ref *common.DataSourceRef) bool {
	return ref != nil && deref(ref.Uid) == "${datasource}" && deref(ref.Type) == "prometheus"
}

// promtoolBinary is promtool from Debian's prometheus package (hack/install-host-deps.sh), or
// $DELTAKEEPER_PROMTOOL; a missing one fails the test.
func promtoolBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DELTAKEEPER_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("no promtool on PATH: run hack/install-host-deps.sh (Debian's prometheus package ships it) or set DELTAKEEPER_PROMTOOL")
	}
	return p
}

// realError undoes a quirk of the SDK's generated code, which returns its error list as an error even when
// the list is empty (a typed nil).
func realError(err error) error {
	var list cog.BuildErrors
	if errors.As(err, &list) && len(list) == 0 {
		return nil
	}
	return err
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
