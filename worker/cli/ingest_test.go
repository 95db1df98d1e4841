package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestIngest_ReportsBatchesAsJSONAndNamesABadFile(t *testing.T) {
	dir := t.TempDir()
	src, tbl := filepath.Join(dir, "src"), filepath.Join(dir, "t")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "a.csv"), []byte("id,day\n1,2024-01-01\n2,2024-01-02\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{tbl, "--source", src, "--format", "csv", "--option", "header=true", "--partition-by", "day", "--available-now", "-o", "json"}
	out, errOut, code := execute(t, newIngestCmd, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := decodeResult(t, out)
	in := res.Ingest
	if res.Outcome != result.Succeeded || in == nil || in.NumBatches != 1 || in.Rows != 2 || in.LastBatch != 0 || in.Backlog == nil || in.Backlog.Files != 0 {
		t.Fatalf("result %s", out)
	}
	if b := in.Batches[0]; b.Files != 1 || len(b.Written) != 2 || b.MeanFileBytes == 0 || b.Version != 1 {
		t.Fatalf("batch %+v", b)
	}
	// Nothing new: nothing to do (exit 3 for people).
	if _, _, code := execute(t, newIngestCmd, args...); code != 3 {
		t.Fatalf("exit %d, want 3 (nothing to do)", code)
	}
	if err := os.WriteFile(filepath.Join(src, "b.csv"), []byte("id,day\n3,not-a-date\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code = execute(t, newIngestCmd, args...)
	res = decodeResult(t, out)
	if code != 2 || res.Reason != "BadFile" || res.Ingest.BadFile == nil || res.Ingest.BadFile.Row != 1 || res.Ingest.BadFile.Column != "day" ||
		!strings.HasSuffix(res.Ingest.BadFile.File, "/b.csv") {
		t.Fatalf("exit %d, result %s: want a BadFile refusal naming b.csv, row 1, column day", code, out)
	}
	if _, _, code := execute(t, newIngestCmd, tbl, "--source", src, "--format", "csv", "--max-bytes-per-trigger", "ten"); code != 2 {
		t.Fatalf("a bad size exits %d, want 2", code)
	}
}
