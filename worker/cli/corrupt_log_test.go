package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

// TestCommands_RefuseATableWhoseLastCommitIsEmpty: a 0-byte last commit is corruption, not an
// empty commit. Every command that deletes or rewrites refuses (exit 2, CorruptTable) naming the
// file and changes nothing: vacuum must not delete the files the lost commit referenced. Reads of
// the latest version refuse too; time travel below the bad commit still works.
func TestCommands_RefuseATableWhoseLastCommitIsEmpty(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 4, 50)
	logDir := filepath.Join(loc, "_delta_log")
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && len(e.Name()) == 25 {
			last = e.Name()
		}
	}
	lastVersion := strings.TrimLeft(strings.TrimSuffix(last, ".json"), "0")
	if err := os.Truncate(filepath.Join(logDir, last), 0); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, loc)
	for _, c := range []struct {
		name string
		cmd  func(Mode) *cobra.Command
		args []string
	}{
		{"vacuum", newVacuumCmd, []string{"--retention", "0", "--allow-short-retention"}},
		{"vacuum full", newVacuumCmd, []string{"--retention", "0", "--allow-short-retention", "--mode", "full"}},
		{"optimize", newOptimizeCmd, nil},
		{"checkpoint", newCheckpointCmd, []string{"--log-cleanup"}},
		{"maintain", newMaintainCmd, []string{"--vacuum", "--retention", "0", "--allow-short-retention"}},
		{"inspect", newInspectCmd, nil},
		{"scan", newScanCmd, []string{"--format", "jsonl"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := execute(t, c.cmd, append([]string{loc, "-o", "json"}, c.args...)...)
			text := out + errOut
			if code != 2 || !strings.Contains(text, result.ReasonCorruptTable) || !strings.Contains(text, last) {
				t.Fatalf("exit %d, want 2 with reason %s naming %s:\n%.2000s", code, result.ReasonCorruptTable, last, text)
			}
			if !slices.Equal(listTree(t, loc), before) {
				t.Fatalf("%s changed the table", c.name)
			}
		})
	}
	// Below the bad commit the table reads as it was.
	prev := fmt.Sprint(atoiOrFail(t, lastVersion) - 1)
	if out, errOut, code := execute(t, newScanCmd, loc, "--version", prev, "--format", "jsonl"); code != 0 || strings.Count(out, "\n") == 0 {
		t.Fatalf("scan --version %s: exit %d %s", prev, code, errOut)
	}
}

func atoiOrFail(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return n
}

// TestCommands_AllRefuseAPartitionColumnMissingFromTheSchema: one validation for every command
// (it was refused by optimize only; scan, vacuum and checkpoint went ahead).
func TestCommands_AllRefuseAPartitionColumnMissingFromTheSchema(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 3, 50, "--partitioned")
	logDir := filepath.Join(loc, "_delta_log")
	first, err := os.ReadFile(filepath.Join(logDir, "00000000000000000000.json"))
	if err != nil {
		t.Fatal(err)
	}
	var metaData string
	for _, line := range strings.Split(string(first), "\n") {
		if strings.HasPrefix(line, `{"metaData":`) {
			metaData = strings.Replace(line, `"partitionColumns":["order_date"]`, `"partitionColumns":["order_day"]`, 1)
		}
	}
	if metaData == "" || !strings.Contains(metaData, "order_day") {
		t.Fatalf("no partitioned metaData in commit 0:\n%s", first)
	}
	entries, _ := os.ReadDir(logDir)
	next := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".json") && len(e.Name()) == 25 {
			next++
		}
	}
	commit := `{"commitInfo":{"operation":"SET TBLPROPERTIES"}}` + "\n" + metaData + "\n"
	if err := os.WriteFile(filepath.Join(logDir, fmt.Sprintf("%020d.json", next)), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
	before := listTree(t, loc)
	for _, c := range []struct {
		name string
		cmd  func(Mode) *cobra.Command
		args []string
	}{
		{"scan", newScanCmd, []string{"--format", "jsonl"}},
		{"vacuum", newVacuumCmd, []string{"--retention", "0", "--allow-short-retention"}},
		{"checkpoint", newCheckpointCmd, nil},
		{"optimize", newOptimizeCmd, nil},
		{"inspect", newInspectCmd, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, errOut, code := execute(t, c.cmd, append([]string{loc, "-o", "json"}, c.args...)...)
			text := out + errOut
			if code != 2 || !strings.Contains(text, result.ReasonCorruptTable) || !strings.Contains(text, `partition column \"order_day\"`) {
				t.Fatalf("exit %d, want 2 with reason %s naming the column:\n%.2000s", code, result.ReasonCorruptTable, text)
			}
			if !slices.Equal(listTree(t, loc), before) {
				t.Fatalf("%s changed the table", c.name)
			}
		})
	}
}
