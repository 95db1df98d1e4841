package optimize

import (
	"bufio"
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// backends are the stores the behaviour tests run on: local disk and the real S3 test server.
var backends = []struct {
	name string
	open func(t *testing.T, name string) storage.Store
}{
	{"local", func(t *testing.T, name string) storage.Store {
		s, err := storage.NewLocal(filepath.Join(t.TempDir(), name))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"s3", func(t *testing.T, name string) storage.Store {
		srv := s3server.Start(t)
		s, err := storage.Open(t.Context(), srv.Location(name), storage.Config{S3: srv.S3Config()})
		if err != nil {
			t.Fatal(err)
		}
		s3Configs[s.Location()] = srv.S3Config()
		return s
	}},
}

// s3Configs remembers each S3 store's client configuration, for child processes.
var s3Configs = map[string]storage.S3Config{}

func localStore(t *testing.T) storage.Store { return backends[0].open(t, "orders") }

// demoTable writes the orders demo table: files small files of rows rows each, partitioned by
// order_date when asked (several files land in each date).
func demoTable(t *testing.T, store storage.Store, files, rows int, partitioned bool) *delta.Table {
	t.Helper()
	tbl := delta.NewTable(store)
	if _, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: files, RowsPerFile: rows, Partitioned: partitioned, Seed: 3}, nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// rowsAt returns the canonical rows of a snapshot, sorted: equal slices mean equal row multisets.
func rowsAt(t *testing.T, snap *delta.Snapshot) []string {
	t.Helper()
	rows, err := tabletest.SortedRows(t.Context(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func latestRows(t *testing.T, tbl *delta.Table) []string {
	t.Helper()
	return rowsAt(t, latest(t, tbl))
}

func latest(t *testing.T, tbl *delta.Table) *delta.Snapshot {
	t.Helper()
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %d rows, want %d (row multisets differ)", what, len(got), len(want))
	}
}

// storedFiles lists the table's objects outside _delta_log, with their sizes.
func storedFiles(t *testing.T, store storage.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for obj, err := range store.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(obj.Key, delta.LogDir) {
			out[obj.Key] = obj.Size
		}
	}
	return out
}

// loggedAction is one line of a commit file.
type loggedAction struct {
	CommitInfo *delta.CommitInfo `json:"commitInfo"`
	Add        *delta.AddFile    `json:"add"`
	Remove     *delta.RemoveFile `json:"remove"`
}

// commitActions reads the actions of commit v.
func commitActions(t *testing.T, store storage.Store, v delta.Version) []loggedAction {
	t.Helper()
	data, err := store.Get(t.Context(), delta.CommitKey(v))
	if err != nil {
		t.Fatal(err)
	}
	var out []loggedAction
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var a loggedAction
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("commit %d: %v", v, err)
		}
		out = append(out, a)
	}
	return out
}

// orphans returns the stored data files that no commit up to the latest version ever added: files a
// failed or lost compaction should have deleted.
func orphans(t *testing.T, tbl *delta.Table) []string {
	t.Helper()
	added := map[string]bool{}
	snap := latest(t, tbl)
	for v := delta.Version(0); v <= snap.Version(); v++ {
		for _, a := range commitActions(t, tbl.Store(), v) {
			if a.Add != nil {
				key, err := delta.ObjectKey(tbl.Location(), a.Add.Path)
				if err != nil {
					t.Fatal(err)
				}
				added[key] = true
			}
		}
	}
	var out []string
	for key := range storedFiles(t, tbl.Store()) {
		if !added[key] {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

func run(t *testing.T, tbl *delta.Table, opts Options) *Report {
	t.Helper()
	rep, err := Run(t.Context(), tbl, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}
