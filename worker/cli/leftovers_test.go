package cli

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The result document says how many temp files of interrupted writes vacuum and log cleanup removed.
func TestVacuumAndLogCleanup_ReportTheTempFilesTheyRemoved(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 4, 100)
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, key := range []string{storage.TempName(delta.DataFileName(9, "zstd")), delta.LogDir + storage.TempName("00000000000000000009.json")} {
		p := filepath.Join(loc, filepath.FromSlash(key))
		if err := os.WriteFile(p, make([]byte, 1234), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := execute(t, newVacuumCmd, loc, "-o", "json")
	if code != 0 {
		t.Fatalf("vacuum exited %d: %s", code, errOut)
	}
	if op := decodeResult(t, out).Ops[0]; op.TempFilesRemoved != 1 || op.TempBytesRemoved != 1234 || op.FilesRemoved != 0 {
		t.Errorf("vacuum %+v", op)
	}
	out, errOut, code = execute(t, newCheckpointCmd, loc, "--log-cleanup", "-o", "json")
	if code != 0 {
		t.Fatalf("checkpoint exited %d: %s", code, errOut)
	}
	if op := decodeResult(t, out).Ops[1]; op.Name != "logCleanup" || op.TempFilesRemoved != 1 || op.TempBytesRemoved != 1234 {
		t.Errorf("log cleanup %+v", op)
	}
}
