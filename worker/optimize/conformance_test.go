package optimize

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/vacuum"
)

// conformanceRefusals are the reference tables deltakeeper must refuse to compact, and why. Every
// other positive table must compact (or have nothing to compact) and read the same afterwards.
var conformanceRefusals = map[string]string{
	"kernel-rs/unshredded-variant": "variant",
	// Row tracking is preserved (rowtracking_test.go compacts it); bin-packing refuses clustered tables.
	"delta-rs/table_with_liquid_clustering": "clustered",
}

// TestConformance_OptimizeAndVacuumKeepEveryReferenceTableReadable compacts, then vacuums with a zero
// retention, then checkpoints and cleans up the log of, a copy of every table of the shared conformance corpus (Spark, Databricks, delta-rs,
// kernel-rs, DAT). Rows are compared as multisets with the rows our scan returned before — which
// the table package's conformance test checks against the reference implementations' expected
// rows — so equal here means equal to the expected rows. Tables deltakeeper must refuse, and the
// corpus's invalid tables, must come out byte for byte unchanged.
func TestConformance_OptimizeAndVacuumKeepEveryReferenceTableReadable(t *testing.T) {
	dir := testutil.ConformanceDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []struct {
		Name, Source, Role string
		TableRoot          string `json:"table_root"`
	}
	if err := json.Unmarshal(data, &tables); err != nil {
		t.Fatal(err)
	}
	var lines []string
	counts := map[string]int{}
	for _, c := range tables {
		id := c.Source + "/" + c.Name
		if c.Role == "log-only" {
			// The fixture has a log but no data files: there is nothing to rewrite or read.
			counts["log-only, skipped"]++
			lines = append(lines, fmt.Sprintf("SKIP %-70s log-only fixture without data files", id))
			continue
		}
		outcome, err := optimizeConformanceCopy(t, filepath.Join(dir, c.Source, c.Name, c.TableRoot), c.Role, conformanceRefusals[id])
		if err != nil {
			t.Errorf("%s: %v", id, err)
			outcome = "FAIL: " + err.Error()
		}
		counts[strings.TrimSuffix(strings.Fields(outcome)[0], ":")]++
		lines = append(lines, fmt.Sprintf("%-75s %s", id, outcome))
	}
	for _, l := range lines {
		t.Log(l)
	}
	t.Logf("conformance copies: %v (of %d tables)", counts, len(tables))
	if len(tables) < 76 {
		t.Errorf("only %d tables in the index", len(tables))
	}
}

// optimizeConformanceCopy runs optimize and vacuum on a copy of one table and checks the outcome.
func optimizeConformanceCopy(t *testing.T, root, role, refusal string) (string, error) {
	copyDir := filepath.Join(t.TempDir(), "t")
	if err := os.CopyFS(copyDir, os.DirFS(root)); err != nil {
		return "", err
	}
	store, err := storage.NewLocal(copyDir)
	if err != nil {
		return "", err
	}
	tbl := delta.NewTable(store)
	hashes := hashTree(t, copyDir)
	unchanged := func(what string) error {
		if !maps.Equal(hashTree(t, copyDir), hashes) {
			return fmt.Errorf("%s changed the table's files", what)
		}
		return nil
	}
	before, readErr := scanRows(t, tbl)
	rep, err := Run(t.Context(), tbl, Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio}, nil)
	switch {
	case role == "negative":
		if err == nil {
			return "", errors.New("an invalid table was compacted")
		}
		return "REFUSED (invalid table) " + firstLine(err), unchanged("the failed optimize")
	case refusal != "":
		if !refused(err) || !strings.Contains(err.Error(), refusal) {
			return "", fmt.Errorf("want a refusal mentioning %q, got %w", refusal, err)
		}
		if err := unchanged("the refused optimize"); err != nil {
			return "", err
		}
		return "REFUSED " + firstLine(err), nil
	case err != nil:
		return "", fmt.Errorf("optimize: %w", err)
	case readErr != nil:
		return "", fmt.Errorf("optimize succeeded on a table deltakeeper cannot read: %w", readErr)
	}
	if err := sameAs(t, tbl, before, "optimize"); err != nil {
		return "", err
	}
	// Vacuum with a zero retention deletes everything the latest version does not reference, the
	// inputs just compacted included; the latest version must still read the same.
	zero := time.Duration(0)
	vrep, err := vacuum.Run(t.Context(), tbl, vacuum.Options{Retention: &zero, AllowShortRetention: true}, nil)
	if err != nil {
		return "", fmt.Errorf("vacuum: %w", err)
	}
	if err := sameAs(t, tbl, before, "vacuum"); err != nil {
		return "", err
	}
	// A checkpoint of the latest version, then log cleanup 40 days later: everything before that
	// checkpoint goes (sidecars included), and the latest version still reads the same.
	later := delta.NewTable(store, delta.WithClock(clockAt(time.Now().AddDate(0, 0, 40))))
	snap, err := later.Latest(t.Context())
	if err != nil {
		return "", err
	}
	if snap.CheckpointVersion() != snap.Version() {
		if err := later.Checkpoint(t.Context(), snap); err != nil {
			return "", fmt.Errorf("checkpoint: %w", err)
		}
	}
	cleaned, err := later.CleanupLog(t.Context())
	if err != nil {
		return "", fmt.Errorf("log cleanup: %w", err)
	}
	if cleaned.OldestKept != snap.Version() && snap.Version() > 0 {
		return "", fmt.Errorf("log cleanup kept version %d onwards, want the new checkpoint %d (%s)", cleaned.OldestKept, snap.Version(), cleaned.Skipped)
	}
	if err := sameAs(t, tbl, before, "checkpoint and log cleanup"); err != nil {
		return "", err
	}
	outcome := "OK"
	if rep.Op.Outcome == result.NothingToDo {
		outcome = "OK (nothing to compact)"
	}
	return fmt.Sprintf("%s: %d rows; compacted %d→%d files, purged %d DV rows; vacuum deleted %d files; log cleanup deleted %d",
		outcome, len(before), rep.FilesRemoved, rep.FilesAdded, rep.RowsPurged, vrep.FilesDeleted, len(cleaned.Deleted)), nil
}

// clockAt is a fixed delta.Clock.
type clockAt time.Time

func (c clockAt) Now() time.Time { return time.Time(c) }

func refused(err error) bool {
	o, _ := classify(err)
	return err != nil && o == result.Refused
}

func sameAs(t *testing.T, tbl *delta.Table, want []string, after string) error {
	got, err := scanRows(t, tbl)
	if err != nil {
		return fmt.Errorf("read after %s: %w", after, err)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("after %s the table reads %d rows, before %d (row multisets differ)", after, len(got), len(want))
	}
	return nil
}

// scanRows reads the latest version's rows as sorted canonical strings.
func scanRows(t *testing.T, tbl *delta.Table) ([]string, error) {
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		return nil, err
	}
	return tabletest.SortedRows(t.Context(), snap)
}

// hashTree maps every file under dir to its SHA-256.
func hashTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out[p] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	if len(s) > 160 {
		s = s[:157] + "..."
	}
	return s
}
