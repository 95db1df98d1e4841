// Package gitops tests the GitOps health checks that ship as text (docs/gitops.md, config/argocd): Argo CD's
// Lua scripts run in gopher-lua, the Lua interpreter Argo CD embeds, against the objects the real controllers
// produce in each state (testdata/states, recorded and checked by test/envtest/kstatus_test.go).
package gitops

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// argoHealth is what a person watching Argo CD expects for each recorded state. Argo's statuses:
// Progressing (not healthy yet, may become so by itself), Degraded (failing, or stuck until someone acts),
// Suspended (paused by its spec), Healthy.
var argoHealth = map[string]string{
	"deltatable-new":                  "Progressing",
	"deltatable-inspecting":           "Progressing",
	"deltatable-ready":                "Healthy",
	"deltatable-unreachable":          "Degraded",
	"deltatable-unsupported":          "Degraded",
	"deltatable-maintenance-failed":   "Degraded",
	"optimizepolicy-new":              "Progressing",
	"optimizepolicy-scheduled":        "Healthy",
	"optimizepolicy-running":          "Healthy",
	"optimizepolicy-run-failed":       "Degraded",
	"optimizepolicy-run-refused":      "Degraded",
	"optimizepolicy-suspended":        "Suspended",
	"optimizepolicy-invalid-schedule": "Degraded",
	"optimizepolicy-no-targets":       "Progressing",
	"streamingest-new":                "Progressing",
	"streamingest-starting":           "Progressing",
	"streamingest-caught-up":          "Healthy",
	"streamingest-source-unreachable": "Degraded",
	"streamingest-bad-file":           "Degraded",
	"streamingest-suspended":          "Suspended",
	"streamingest-completed":          "Healthy",
}

var kinds = []string{"DeltaTable", "OptimizePolicy", "StreamIngest"}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// healthScripts reads the Lua scripts from the shipped argocd-cm snippet, by kind.
func healthScripts(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "config", "argocd", "argocd-cm-health.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		t.Fatalf("config/argocd/argocd-cm-health.yaml: %v", err)
	}
	if cm.Name != "argocd-cm" {
		t.Errorf("the snippet patches ConfigMap %q; Argo CD reads argocd-cm", cm.Name)
	}
	out := map[string]string{}
	for _, kind := range kinds {
		key := "resource.customizations.health.deltakeeper.io_" + kind
		script, ok := cm.Data[key]
		if !ok {
			t.Fatalf("argocd-cm snippet lacks %s", key)
		}
		out[kind] = script
	}
	if len(cm.Data) != len(kinds) {
		t.Errorf("argocd-cm snippet has %d keys, want one per kind", len(cm.Data))
	}
	return out
}

// runHealth evaluates an Argo CD health script on obj as Argo CD does: obj is a global table, the script
// returns a table with status and message.
func runHealth(t *testing.T, script string, obj map[string]any) (status, message string) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer l.Close()
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		t.Fatalf("lua: %v", err)
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		t.Fatalf("the script returned %s, want a table", l.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message"))
}

// toLua converts a decoded JSON value the way Argo CD hands objects to health scripts: maps become tables
// with string keys, lists 1-based arrays, numbers LNumber.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		tbl := l.NewTable()
		for k, e := range v {
			tbl.RawSetString(k, toLua(l, e))
		}
		return tbl
	case []any:
		tbl := l.NewTable()
		for i, e := range v {
			tbl.RawSetInt(i+1, toLua(l, e))
		}
		return tbl
	case float64:
		return lua.LNumber(v)
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case nil:
		return lua.LNil
	}
	panic("unexpected JSON value")
}

func loadStates(t *testing.T) map[string]map[string]any {
	t.Helper()
	dir := filepath.Join(repoRoot(t), "test", "gitops", "testdata", "states")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded states in %s: %v", dir, err)
	}
	out := map[string]map[string]any{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".json")] = obj
	}
	return out
}

func TestArgoCDHealth_EveryRecordedStateReadsAsAPersonExpects(t *testing.T) {
	scripts := healthScripts(t)
	states := loadStates(t)
	names := make([]string, 0, len(states))
	for name := range states {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		obj := states[name]
		want, ok := argoHealth[name]
		if !ok {
			t.Errorf("state %s has no expected Argo CD health: add it to argoHealth", name)
			continue
		}
		kind, _ := obj["kind"].(string)
		script, ok := scripts[kind]
		if !ok {
			t.Fatalf("state %s: no script for kind %q", name, kind)
		}
		got, msg := runHealth(t, script, obj)
		if got != want {
			t.Errorf("%s: Argo CD health %s (%s), want %s", name, got, msg, want)
		}
		if msg == "" {
			t.Errorf("%s: health %s without a message", name, got)
		}
	}
	for name := range argoHealth {
		if _, ok := states[name]; !ok {
			t.Errorf("expected state %s was not recorded by test/envtest/kstatus_test.go", name)
		}
	}
}

func TestArgoCDHealth_OneScriptForAllKindsAndTheDocsShowIt(t *testing.T) {
	scripts := healthScripts(t)
	for _, kind := range kinds[1:] {
		if scripts[kind] != scripts[kinds[0]] {
			t.Errorf("the %s script differs from the %s one", kind, kinds[0])
		}
	}
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "gitops.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), scripts[kinds[0]]) {
		t.Error("docs/gitops.md does not show the script of config/argocd/argocd-cm-health.yaml verbatim")
	}
}

func TestArgoCDHealth_ANewerSpecIsProgressingWhateverTheConditionsSay(t *testing.T) {
	scripts := healthScripts(t)
	states := loadStates(t)
	for _, name := range []string{"deltatable-ready", "streamingest-bad-file", "optimizepolicy-run-failed"} {
		obj := states[name]
		obj["metadata"].(map[string]any)["generation"] = float64(7)
		if got, msg := runHealth(t, scripts[obj["kind"].(string)], obj); got != "Progressing" {
			t.Errorf("%s with an unobserved generation: %s (%s), want Progressing", name, got, msg)
		}
	}
}
