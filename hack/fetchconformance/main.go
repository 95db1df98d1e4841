// Command fetchconformance (run by hack/fetch-conformance.sh) fetches the Delta conformance tables the tests
// read from their upstream repositories, at the commits recorded in hack/conformance/index.json, into the
// directory the tests look in ($DELTA_CONFORMANCE_DIR, else ../shared/delta-conformance). It is for
// contributors who cloned the repository alone.
//
// Per table (the index's kind):
//   - git-dir: the table root is repo_path at the commit (git checks every object against the commit);
//   - dat-case: repo_path holds delta/, expected/ and test_case_info.json, copied as they are;
//   - tarzst-golden, tarzst-data: repo_path is a .tar.zst archive, checked against archive_sha256 and
//     unpacked: the directory holding _delta_log becomes delta/, an expected/ beside it expected/.
//
// Expected rows that were transcribed by hand from upstream tests (expected kinds jsonl-derived-from-tests
// and text-table-from-tests) exist in no upstream repository: those tables are fetched without them and
// listed at the end. A table whose files are all fetched is also checked against the index's byte count.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fetch-conformance:", err)
		os.Exit(1)
	}
}

type options struct {
	index   string
	dir     string
	gitBase string
	only    map[string]bool
	dryRun  bool
}

func parseFlags(args []string) (options, error) {
	fs := flag.NewFlagSet("fetch-conformance", flag.ContinueOnError)
	root, _ := repoRoot()
	defDir := os.Getenv("DELTA_CONFORMANCE_DIR")
	if defDir == "" && root != "" {
		defDir = filepath.Join(root, "..", "shared", "delta-conformance")
	}
	var o options
	var only string
	fs.StringVar(&o.index, "index", filepath.Join(root, "hack", "conformance", "index.json"), "the index of tables to fetch")
	fs.StringVar(&o.dir, "dir", defDir, "where to put the tables ($DELTA_CONFORMANCE_DIR, else ../shared/delta-conformance)")
	fs.StringVar(&o.gitBase, "git-base", "https://github.com", "where the repositories are: <git-base>/<owner>/<name>")
	fs.StringVar(&only, "only", "", "comma-separated <source>/<name> or <name> of the tables to fetch (default: all)")
	fs.BoolVar(&o.dryRun, "dry-run", false, "print what would be fetched and from where, fetch nothing")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if o.dir == "" {
		return o, errors.New("no target directory: pass -dir or set DELTA_CONFORMANCE_DIR")
	}
	if only != "" {
		o.only = map[string]bool{}
		for _, n := range strings.Split(only, ",") {
			o.only[strings.TrimSpace(n)] = true
		}
	}
	return o, nil
}

func run(args []string, out io.Writer) error {
	o, err := parseFlags(args)
	if err != nil {
		return err
	}
	entries, err := readIndex(o.index)
	if err != nil {
		return err
	}
	entries = selectEntries(entries, o.only)
	if len(entries) == 0 {
		return errors.New("no table of the index matches -only")
	}
	groups := groupByCheckout(entries)
	if o.dryRun {
		printPlan(out, o, groups)
		return nil
	}
	if err := os.MkdirAll(o.dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", o.dir, err)
	}
	work, err := os.MkdirTemp("", "fetch-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var curated, failed []string
	fetched, present := 0, 0
	for i, g := range groups {
		var todo []entry
		for _, e := range g.entries {
			if _, err := os.Stat(filepath.Join(o.dir, e.Source, e.Name)); err == nil {
				fmt.Fprintf(out, "%s/%s: already present, left alone\n", e.Source, e.Name)
				present++
				continue
			}
			todo = append(todo, e)
		}
		if len(todo) == 0 {
			continue
		}
		fmt.Fprintf(out, "%s@%s: %d tables\n", g.repo, short(g.commit), len(todo))
		checkout := filepath.Join(work, fmt.Sprint(i))
		if err := sparseCheckout(o.gitBase+"/"+g.repo, g.commit, pathsOf(todo), checkout); err != nil {
			return fmt.Errorf("fetch %s at %s: %w", g.repo, g.commit, err)
		}
		for _, e := range todo {
			if err := install(e, checkout, work, o.dir); err != nil {
				failed = append(failed, fmt.Sprintf("%s/%s: %v", e.Source, e.Name, err))
				continue
			}
			fetched++
			if e.curated() {
				curated = append(curated, fmt.Sprintf("%s/%s (%s)", e.Source, e.Name, e.Expected.Kind))
			}
		}
	}
	if err := copyFile(o.index, filepath.Join(o.dir, "index.json")); err != nil {
		return err
	}
	fmt.Fprintf(out, "fetched %d tables into %s (%d already present)\n", fetched, o.dir, present)
	if len(curated) > 0 {
		fmt.Fprintf(out, "\n%d tables have hand-transcribed expected rows, which no upstream repository holds; they were fetched\n"+
			"without expected/ (tests comparing their rows need a copy of the team's corpus):\n  %s\n",
			len(curated), strings.Join(curated, "\n  "))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d tables failed:\n  %s", len(failed), strings.Join(failed, "\n  "))
	}
	return nil
}

func printPlan(out io.Writer, o options, groups []checkoutGroup) {
	fmt.Fprintf(out, "index %s -> %s\n", o.index, o.dir)
	for _, g := range groups {
		fmt.Fprintf(out, "git %s/%s at %s\n", o.gitBase, g.repo, g.commit)
		for _, e := range g.entries {
			what := "table root " + e.RepoPath
			switch e.Kind {
			case kindDAT:
				what = "DAT case " + e.RepoPath
			case kindTarGolden, kindTarData:
				what = "archive " + e.RepoPath + " sha256 " + e.ArchiveSHA256
			}
			note := ""
			if e.curated() {
				note = "; expected rows curated by hand, not fetchable"
			}
			fmt.Fprintf(out, "  %s/%s: %s%s\n", e.Source, e.Name, what, note)
		}
	}
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// repoRoot finds the repository root from the working directory (go run runs in the caller's directory).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "conformance", "index.json")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("not inside the deltakeeper repository")
		}
		dir = parent
	}
}
