package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestApplyMemoryLimit_TakesNinetyPercentOfTheContainerLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "memory.max"), []byte("536870912\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unlimited := t.TempDir()
	if err := os.WriteFile(filepath.Join(unlimited, "memory.max"), []byte("max\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name   string
		env    map[string]string
		cgroup string
		want   int64
	}{
		{"downward API", map[string]string{"DELTAKEEPER_MEMORY_LIMIT": "268435456"}, unlimited, 241591910},
		{"cgroup v2", nil, v2, 483183820},
		{"no limit", nil, unlimited, 0},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "100MiB", "DELTAKEEPER_MEMORY_LIMIT": "268435456"}, v2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := applyMemoryLimit(env(tc.env), tc.cgroup)
			if got != tc.want {
				t.Fatalf("soft limit = %d, want %d", got, tc.want)
			}
			if tc.want > 0 && debug.SetMemoryLimit(-1) != tc.want {
				t.Fatal("the runtime's limit was not set")
			}
		})
	}
}
