package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRootFor_RunsThePluginWhenCalledAsKubectlDeltakeeper(t *testing.T) {
	for argv0, want := range map[string]string{
		"/usr/local/bin/kubectl-deltakeeper":         "kubectl deltakeeper [command]",
		"/home/me/.krew/bin/kubectl-deltakeeper.exe": "kubectl deltakeeper [command]",
		"/usr/local/bin/deltakeeper":                 "deltakeeper [command]",
	} {
		root := rootFor(argv0)
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs([]string{"--help"})
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s --help: want usage %q, got:\n%s", argv0, want, out.String())
		}
	}
	var out bytes.Buffer
	root := rootFor("deltakeeper")
	root.SetOut(&out)
	root.SetArgs([]string{"kubectl", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"deltakeeper kubectl [command]", "status", "explain", "history", "suspend", "resume", "run"} {
		if !strings.Contains(out.String(), sub) {
			t.Errorf("deltakeeper kubectl --help lacks %q:\n%s", sub, out.String())
		}
	}
}
