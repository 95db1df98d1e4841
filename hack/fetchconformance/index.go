package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"sort"
	"strings"
)

// Kinds of index entries: how a table is stored upstream.
const (
	kindGitDir    = "git-dir"
	kindDAT       = "dat-case"
	kindTarGolden = "tarzst-golden"
	kindTarData   = "tarzst-data"
)

// entry is one table of index.json (the fields the fetch needs; the record is written back whole as the
// table's SOURCE.json).
type entry struct {
	Name          string `json:"name"`
	Source        string `json:"source"`
	Kind          string `json:"kind"`
	Repo          string `json:"repo"`
	Commit        string `json:"commit"`
	RepoPath      string `json:"repo_path"`
	TableRoot     string `json:"table_root"`
	ArchiveSHA256 string `json:"archive_sha256"`
	Bytes         int64  `json:"bytes"`
	Expected      struct {
		Kind string `json:"kind"`
	} `json:"expected"`
	raw json.RawMessage
}

// curated reports whether the table's expected rows were transcribed by hand (no upstream file holds them).
func (e *entry) curated() bool {
	return e.Expected.Kind == "jsonl-derived-from-tests" || e.Expected.Kind == "text-table-from-tests"
}

func readIndex(file string) ([]entry, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read the index: %w", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%s is not a JSON list of tables: %w", file, err)
	}
	entries := make([]entry, 0, len(raws))
	seen := map[string]bool{}
	for i, raw := range raws {
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("%s entry %d: %w", file, i, err)
		}
		e.raw = raw
		if err := e.validate(); err != nil {
			return nil, fmt.Errorf("%s entry %d (%s/%s): %w", file, i, e.Source, e.Name, err)
		}
		key := e.Source + "/" + e.Name
		if seen[key] {
			return nil, fmt.Errorf("%s: table %s is listed twice", file, key)
		}
		seen[key] = true
		entries = append(entries, e)
	}
	return entries, nil
}

// validate rejects an entry the fetch cannot place safely: unknown kinds, paths that climb out of the
// target directory, commits that are not full hashes.
func (e *entry) validate() error {
	for _, s := range []string{e.Name, e.Source} {
		if s == "" || strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
			return fmt.Errorf("bad name or source %q", s)
		}
	}
	if len(e.Commit) != 40 || strings.Trim(e.Commit, "0123456789abcdef") != "" {
		return fmt.Errorf("commit %q is not a full hex hash", e.Commit)
	}
	if strings.Count(e.Repo, "/") != 1 || strings.Contains(e.Repo, "..") {
		return fmt.Errorf("repo %q is not owner/name", e.Repo)
	}
	if e.RepoPath == "" || path.IsAbs(e.RepoPath) || path.Clean(e.RepoPath) != e.RepoPath || strings.HasPrefix(e.RepoPath, "..") {
		return fmt.Errorf("repo_path %q is not a clean relative path", e.RepoPath)
	}
	if e.TableRoot != "delta/" {
		return fmt.Errorf("table_root %q: only delta/ is supported", e.TableRoot)
	}
	switch e.Kind {
	case kindGitDir, kindDAT:
	case kindTarGolden, kindTarData:
		if len(e.ArchiveSHA256) != 64 {
			return fmt.Errorf("archive without a sha256")
		}
	default:
		return fmt.Errorf("unknown kind %q", e.Kind)
	}
	return nil
}

func selectEntries(entries []entry, only map[string]bool) []entry {
	if only == nil {
		return entries
	}
	var out []entry
	for _, e := range entries {
		if only[e.Name] || only[e.Source+"/"+e.Name] {
			out = append(out, e)
		}
	}
	return out
}

// checkoutGroup is one sparse checkout: the tables of one repository at one commit.
type checkoutGroup struct {
	repo, commit string
	entries      []entry
}

func groupByCheckout(entries []entry) []checkoutGroup {
	idx := map[string]int{}
	var groups []checkoutGroup
	for _, e := range entries {
		key := e.Repo + "@" + e.Commit
		i, ok := idx[key]
		if !ok {
			i = len(groups)
			idx[key] = i
			groups = append(groups, checkoutGroup{repo: e.Repo, commit: e.Commit})
		}
		groups[i].entries = append(groups[i].entries, e)
	}
	sort.SliceStable(groups, func(a, b int) bool { return groups[a].repo < groups[b].repo })
	return groups
}

// pathsOf lists the repository paths a group's checkout needs.
func pathsOf(entries []entry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.RepoPath)
	}
	sort.Strings(out)
	return out
}
