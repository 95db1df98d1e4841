// Package testutil holds helpers shared by the project's tests.
package testutil

import (
	"fmt"
	"os"
	"path/filepath"
)

// RepoRoot returns the repository root: the nearest ancestor of the working directory holding the main
// module's go.mod (not a nested module's).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && isMainModule(data) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/deltakeeper/deltakeeper above the working directory")
		}
		dir = parent
	}
}

func isMainModule(goMod []byte) bool {
	const want = "module github.com/deltakeeper/deltakeeper\n"
	return len(goMod) >= len(want) && string(goMod[:len(want)]) == want
}
