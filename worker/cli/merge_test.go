package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

// TestMerge_UpsertThroughTheCommandWithTxnAndExitCodes drives deltakeeper merge: an upsert with a
// delete marker and --json, the same batch id again (nothing to do, exit 3), a duplicate key
// (refused, exit 2, naming the key) and a bad flag.
func TestMerge_UpsertThroughTheCommandWithTxnAndExitCodes(t *testing.T) {
	dir := t.TempDir()
	land, tbl := filepath.Join(dir, "land"), filepath.Join(dir, "t")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(land, "a.csv"), "id,name\n1,a\n2,b\n3,c\n")
	if out, errOut, code := execute(t, newIngestCmd, tbl, "--source", land, "--format", "csv", "--option", "header=true", "-o", "json"); code != 0 {
		t.Fatalf("ingest exit %d: %s %s", code, out, errOut)
	}
	batch := filepath.Join(dir, "cdc", "1.json")
	write(batch, `{"id":2,"name":"B"}`+"\n"+`{"id":3,"op_delete":true}`+"\n"+`{"id":4,"name":"d"}`+"\n")
	args := []string{tbl, "--source", batch, "--format", "json", "--mode", "upsert", "--keys", "id", "--delete-column", "op_delete", "--app-id", "cdc", "--batch-id", "1", "--json"}
	out, errOut, code := execute(t, newMergeCmd, args...)
	if code != 0 {
		t.Fatalf("merge exit %d: %s %s", code, out, errOut)
	}
	res := decodeResult(t, out)
	m := res.Merge
	if res.Outcome != result.Succeeded || m == nil || m.RowsUpdated != 1 || m.RowsDeleted != 1 || m.RowsInserted != 1 || m.FilesScanned != 1 || m.Version != 2 {
		t.Fatalf("result %s", out)
	}
	out, _, code = execute(t, newMergeCmd, args...)
	if res := decodeResult(t, out); code != 3 || !res.Merge.AlreadyCommitted {
		t.Fatalf("the same batch again: exit %d, %s; want 3 (nothing to do)", code, out)
	}
	scan, _, code := execute(t, newScanCmd, tbl)
	if code != 0 || !strings.Contains(scan, `"id":2,"name":"B"`) || strings.Contains(scan, `"id":3`) || !strings.Contains(scan, `"id":4,"name":"d"`) {
		t.Fatalf("scan exit %d:\n%s", code, scan)
	}
	dup := filepath.Join(dir, "cdc", "dup.json")
	write(dup, `{"id":1,"name":"x"}`+"\n"+`{"id":1,"name":"y"}`+"\n")
	out, _, code = execute(t, newMergeCmd, tbl, "--source", dup, "--format", "json", "--mode", "upsert", "--keys", "id", "-o", "json")
	if res := decodeResult(t, out); code != 2 || !strings.Contains(res.Message, "id=1") {
		t.Fatalf("duplicate key: exit %d, %s; want 2 naming id=1", code, out)
	}
	if _, _, code := execute(t, newMergeCmd, tbl, "--source", dup, "--format", "json", "--mode", "sideways"); code != 2 {
		t.Fatalf("a bad mode exits %d, want 2", code)
	}
	if _, _, code := execute(t, newMergeCmd, tbl, "--source", dup, "--format", "json", "--mode", "upsert"); code != 2 {
		t.Fatalf("upsert without keys exits %d, want 2", code)
	}
}

// TestIngest_UpsertStreamIsExactlyOnce: an upsert stream's batches are merges carrying the
// stream's txn; running again does nothing.
func TestIngest_UpsertStreamIsExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	src, tbl := filepath.Join(dir, "src"), filepath.Join(dir, "t")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "1.json"), []byte(`{"id":1,"v":1}`+"\n"+`{"id":2,"v":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "2.json"), []byte(`{"id":1,"v":10}`+"\n"+`{"id":2,"del":true}`+"\n"+`{"id":3,"v":3}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{tbl, "--source", src, "--format", "json", "--mode", "upsert", "--keys", "id", "--delete-column", "del", "--available-now", "--max-files-per-trigger", "1", "-o", "json"}
	out, errOut, code := execute(t, newIngestCmd, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	res := decodeResult(t, out)
	if res.Ingest.NumBatches != 2 || res.Ingest.Batches[1].Merge == nil || res.Ingest.Batches[1].Merge.RowsUpdated != 1 {
		t.Fatalf("result %s", out)
	}
	if _, _, code := execute(t, newIngestCmd, args...); code != 3 {
		t.Fatalf("again: exit %d, want 3", code)
	}
	scan, _, _ := execute(t, newScanCmd, tbl)
	lines := strings.Split(strings.TrimSpace(scan), "\n")
	if len(lines) != 2 || !strings.Contains(scan, `{"id":1,"v":10}`) || !strings.Contains(scan, `{"id":3,"v":3}`) {
		t.Fatalf("scan:\n%s", scan)
	}
}
