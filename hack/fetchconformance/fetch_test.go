package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// The fetch cannot reach GitHub here, so the test plays GitHub: it builds local repositories that hold
// tables of the team's corpus the way their upstream repositories do (a table directory, a DAT case, golden
// and data .tar.zst archives), points an index at their commits, fetches over file:// and compares what
// arrived with the corpus byte for byte.

// upstream is one table placed in a fake upstream repository.
type upstream struct {
	source, name string
	layout       string // git-dir, dat-case, tarzst-golden, tarzst-data
}

var fakeTables = []upstream{
	{"delta-rs", "cdc_ict_table", kindGitDir},  // stats-only: every file upstream, byte count checked
	{"kernel-rs", "with-short-dv", kindGitDir}, // curated expected rows
	{"dat", "basic_append", kindDAT},           // DAT case with expected/
	{"kernel-rs-golden", "124-decimal-decode-bug", kindTarGolden},
	{"kernel-rs", "timestamp-partitioned-table", kindTarData}, // curated expected rows
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// fakeUpstream builds the repositories under base and returns an index of the tables at their commits.
func fakeUpstream(t *testing.T, corpus, base string, real []entry) string {
	t.Helper()
	byKey := map[string]entry{}
	for _, e := range real {
		byKey[e.Source+"/"+e.Name] = e
	}
	repos := map[string]string{}
	var picked []entry
	for _, u := range fakeTables {
		e, ok := byKey[u.source+"/"+u.name]
		if !ok || e.Kind != u.layout {
			t.Fatalf("the index has no %s table %s/%s", u.layout, u.source, u.name)
		}
		repo, ok := repos[e.Repo]
		if !ok {
			repo = filepath.Join(base, filepath.FromSlash(e.Repo))
			if err := os.MkdirAll(repo, 0o755); err != nil {
				t.Fatal(err)
			}
			git(t, repo, "init", "-q")
			git(t, repo, "config", "uploadpack.allowFilter", "true")
			git(t, repo, "config", "uploadpack.allowAnySHA1InWant", "true")
			repos[e.Repo] = repo
		}
		table := filepath.Join(corpus, u.source, u.name)
		at := filepath.Join(repo, filepath.FromSlash(e.RepoPath))
		switch u.layout {
		case kindGitDir:
			mustCopy(t, filepath.Join(table, "delta"), at)
		case kindDAT:
			mustCopy(t, table, at)
			if err := os.Remove(filepath.Join(at, "SOURCE.json")); err != nil {
				t.Fatal(err)
			}
		case kindTarGolden, kindTarData:
			files := map[string]string{u.name + "/": filepath.Join(table, "delta")}
			if u.layout == kindTarGolden {
				files = map[string]string{u.name + "/delta/": filepath.Join(table, "delta"), u.name + "/expected/": filepath.Join(table, "expected")}
			}
			data := tarZstd(t, files)
			if err := os.MkdirAll(filepath.Dir(at), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(at, data, 0o644); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			e.ArchiveSHA256 = hex.EncodeToString(sum[:])
		}
		picked = append(picked, e)
	}
	commits := map[string]string{}
	for name, repo := range repos {
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", "tables")
		commits[name] = git(t, repo, "rev-parse", "HEAD")
	}
	var out []map[string]any
	for _, e := range picked {
		var rec map[string]any
		if err := json.Unmarshal(e.raw, &rec); err != nil {
			t.Fatal(err)
		}
		rec["commit"] = commits[e.Repo]
		if e.ArchiveSHA256 != "" {
			rec["archive_sha256"] = e.ArchiveSHA256
		}
		out = append(out, rec)
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	idx := filepath.Join(t.TempDir(), "index.json")
	if err := os.WriteFile(idx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return idx
}

func tarZstd(t *testing.T, dirs map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for prefix, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := tw.WriteHeader(&tar.Header{Name: prefix + filepath.ToSlash(rel), Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
				return err
			}
			_, err = tw.Write(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func mustCopy(t *testing.T, src, dst string) {
	t.Helper()
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
}

// sameTree compares two directories file by file, byte for byte.
func sameTree(t *testing.T, want, got string) {
	t.Helper()
	count := 0
	err := filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(want, p)
		a, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(filepath.Join(got, rel))
		if err != nil {
			t.Errorf("missing %s: %v", rel, err)
			return nil
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs", rel)
		}
		count++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := treeBytes(got); n == 0 || count == 0 {
		t.Errorf("%s: nothing fetched", got)
	}
}

func TestFetch_PlacesUpstreamTablesExactlyAsTheCorpusHasThem(t *testing.T) {
	corpus := testutil.ConformanceDir(t)
	real, err := readIndex(filepath.Join(corpus, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	idx := fakeUpstream(t, corpus, base, real)
	out := filepath.Join(t.TempDir(), "corpus")
	var log bytes.Buffer
	if err := run([]string{"-index", idx, "-dir", out, "-git-base", "file://" + base}, &log); err != nil {
		t.Fatalf("fetch: %v\n%s", err, log.String())
	}
	for _, u := range fakeTables {
		want := filepath.Join(corpus, u.source, u.name)
		got := filepath.Join(out, u.source, u.name)
		sameTree(t, filepath.Join(want, "delta"), filepath.Join(got, "delta"))
		e := byName(t, real, u.source, u.name)
		if _, err := os.Stat(filepath.Join(want, "expected")); err == nil && !e.curated() {
			sameTree(t, filepath.Join(want, "expected"), filepath.Join(got, "expected"))
		}
		if e.curated() {
			if _, err := os.Stat(filepath.Join(got, "expected")); err == nil {
				t.Errorf("%s/%s: curated expected rows cannot come from upstream, yet expected/ exists", u.source, u.name)
			}
			if !strings.Contains(log.String(), u.source+"/"+u.name+" (") {
				t.Errorf("%s/%s is not listed as curated:\n%s", u.source, u.name, log.String())
			}
		}
		var rec map[string]any
		data, err := os.ReadFile(filepath.Join(got, "SOURCE.json"))
		if err != nil || json.Unmarshal(data, &rec) != nil || rec["name"] != u.name {
			t.Errorf("%s/%s: SOURCE.json %s (%v)", u.source, u.name, data, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "index.json")); err != nil {
		t.Errorf("index.json not written: %v", err)
	}

	// A second run leaves the tables alone.
	log.Reset()
	if err := run([]string{"-index", idx, "-dir", out, "-git-base", "file://" + base}, &log); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(log.String(), ": already present"); n != len(fakeTables) {
		t.Errorf("second run: %d tables already present, want %d\n%s", n, len(fakeTables), log.String())
	}
}

func TestFetch_RefusesAnArchiveWhoseChecksumDiffers(t *testing.T) {
	corpus := testutil.ConformanceDir(t)
	real, err := readIndex(filepath.Join(corpus, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	idx := fakeUpstream(t, corpus, base, real)
	data, _ := os.ReadFile(idx)
	var recs []map[string]any
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r["name"] == "124-decimal-decode-bug" {
			r["archive_sha256"] = strings.Repeat("0", 64)
		}
	}
	data, _ = json.Marshal(recs)
	if err := os.WriteFile(idx, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "corpus")
	var log bytes.Buffer
	err = run([]string{"-index", idx, "-dir", out, "-git-base", "file://" + base}, &log)
	if err == nil || !strings.Contains(err.Error(), "124-decimal-decode-bug") || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("err = %v, want the checksum refusal", err)
	}
	if _, err := os.Stat(filepath.Join(out, "kernel-rs-golden", "124-decimal-decode-bug")); err == nil {
		t.Error("the refused table was installed")
	}
	if _, err := os.Stat(filepath.Join(out, "dat", "basic_append", "delta", "_delta_log")); err != nil {
		t.Errorf("the other tables must still arrive: %v", err)
	}
}

func TestIndex_TheRepositoryCopyMatchesTheCorpusAndParses(t *testing.T) {
	corpus := testutil.ConformanceDir(t)
	root, err := testutil.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile(filepath.Join(root, "hack", "conformance", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(filepath.Join(corpus, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours, theirs) {
		t.Error("hack/conformance/index.json differs from the corpus's index.json: copy it again")
	}
	entries, err := readIndex(filepath.Join(root, "hack", "conformance", "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var plan bytes.Buffer
	if err := run([]string{"-dry-run", "-dir", t.TempDir()}, &plan); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(plan.String(), "  "+e.Source+"/"+e.Name+": ") {
			t.Errorf("the dry run does not plan %s/%s", e.Source, e.Name)
		}
		if _, err := os.Stat(filepath.Join(corpus, e.Source, e.Name, "delta", "_delta_log")); err != nil {
			t.Errorf("%s/%s is in the index but not a table of the corpus: %v", e.Source, e.Name, err)
		}
	}
}

func TestIndex_RejectsEntriesThatWouldEscapeTheTargetDirectory(t *testing.T) {
	good := entry{Name: "t", Source: "s", Kind: kindGitDir, Repo: "o/r", Commit: strings.Repeat("a", 40), RepoPath: "tests/t", TableRoot: "delta/"}
	if err := good.validate(); err != nil {
		t.Fatalf("a good entry: %v", err)
	}
	for name, edit := range map[string]func(*entry){
		"name with a slash":   func(e *entry) { e.Name = "../etc" },
		"climbing repo path":  func(e *entry) { e.RepoPath = "../../x" },
		"absolute repo path":  func(e *entry) { e.RepoPath = "/etc" },
		"short commit":        func(e *entry) { e.Commit = "abc123" },
		"unknown kind":        func(e *entry) { e.Kind = "zip" },
		"archive without sum": func(e *entry) { e.Kind = kindTarData },
		"repo not owner/name": func(e *entry) { e.Repo = "o/r/x" },
	} {
		e := good
		edit(&e)
		if err := e.validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func byName(t *testing.T, entries []entry, source, name string) entry {
	t.Helper()
	for _, e := range entries {
		if e.Source == source && e.Name == name {
			return e
		}
	}
	t.Fatalf("no %s/%s", source, name)
	return entry{}
}
