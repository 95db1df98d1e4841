package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The corrupt-table corpus: every table command against every variant of corruption in
// corrupt_corpus_variants_test.go, each built from a small healthy table the project writes. A
// command either refuses (exit 2, the variant's reason, naming the file and the field where there
// is one) with every byte of the table directory unchanged, or succeeds where success is
// legitimate (the variant says why).

// corpusCommand is one command line the corpus runs; readsData says whether it opens data files
// (the others work from the log alone, so a broken data file is none of their business).
type corpusCommand struct {
	name      string
	cmd       func(Mode) *cobra.Command
	args      func(c *corpusCase) []string
	readsData bool
}

var corpusCommands = []corpusCommand{
	{"inspect", newInspectCmd, nil, false},
	{"scan", newScanCmd, fixed("--format", "jsonl"), true},
	{"optimize", newOptimizeCmd, nil, true},
	{"optimize zorder", newOptimizeCmd, fixed("--zorder-by", "customer_id"), true},
	{"vacuum lite", newVacuumCmd, fixed("--retention", "0", "--allow-short-retention", "--mode", "lite"), false},
	{"vacuum full", newVacuumCmd, fixed("--retention", "0", "--allow-short-retention", "--mode", "full"), false},
	{"checkpoint", newCheckpointCmd, fixed("--log-cleanup"), false},
	{"maintain", newMaintainCmd, fixed("--optimize", "--vacuum", "--retention", "0", "--allow-short-retention",
		"--checkpoint", "--log-cleanup"), true},
	{"alter", newAlterCmd, fixed("--cluster-by", "customer_id"), false},
	{"quality", newQualityCmd, fixed("--columns", "customer_id"), false},
	{"ingest", newIngestCmd, func(c *corpusCase) []string {
		return []string{"--source", c.source, "--format", "csv", "--option", "header=true", "--available-now"}
	}, false},
}

func fixed(args ...string) func(*corpusCase) []string {
	return func(*corpusCase) []string { return args }
}

// corpusCase is one variant applied to a fresh copy of the healthy table.
type corpusCase struct {
	t       *testing.T
	dir     string // the table
	source  string // ingest's source directory, outside the table
	ckptV   int    // the version of the table's checkpoint
	latestV int
}

const (
	corpusRows     = 25 // 5 files of 5 rows
	corpusRowsFile = 5
)

// healthyCorpusTable writes the table every variant starts from: three files in commits up to a
// checkpoint, then two more commits of one file each; 25 rows, unpartitioned.
func healthyCorpusTable(t *testing.T) (dir string, ckptV, latestV int) {
	dir = filepath.Join(t.TempDir(), "healthy")
	demoTable(t, dir, 3, corpusRowsFile)
	if _, errOut, code := execute(t, newCheckpointCmd, dir); code != 0 {
		t.Fatalf("checkpoint: exit %d %s", code, errOut)
	}
	demoTable(t, dir, 2, corpusRowsFile)
	entries, err := os.ReadDir(filepath.Join(dir, "_delta_log"))
	must(t, err)
	ckptV, latestV = -1, -1
	for _, e := range entries {
		var v int
		if n, _ := fmt.Sscanf(e.Name(), "%020d.checkpoint.parquet", &v); n == 1 && strings.HasSuffix(e.Name(), ".checkpoint.parquet") {
			ckptV = v
		}
		if len(e.Name()) == len(commitName(0)) && strings.HasSuffix(e.Name(), ".json") {
			latestV = max(latestV, atoiOrFail(t, strings.TrimSuffix(e.Name(), ".json")))
		}
	}
	if ckptV < 1 || latestV != ckptV+2 {
		t.Fatalf("healthy table: checkpoint at %d, latest %d; want a checkpoint two commits below the latest", ckptV, latestV)
	}
	return dir, ckptV, latestV
}

func TestCorruptCorpus_EveryCommandRefusesWithoutChangingAByteOrSucceedsLegitimately(t *testing.T) {
	healthy, ckptV, latestV := healthyCorpusTable(t)
	if len(corpusVariants) < 40 {
		t.Fatalf("the corpus has %d variants, want at least 40", len(corpusVariants))
	}
	seen := map[string]bool{}
	for _, v := range corpusVariants {
		if seen[v.name] {
			t.Fatalf("variant %q twice", v.name)
		}
		seen[v.name] = true
		t.Run(v.name, func(t *testing.T) {
			for _, c := range corpusCommands {
				t.Run(c.name, func(t *testing.T) {
					cc := &corpusCase{t: t, dir: filepath.Join(t.TempDir(), "t"), source: filepath.Join(t.TempDir(), "src"),
						ckptV: ckptV, latestV: latestV}
					copyTree(t, healthy, cc.dir)
					writeIngestSource(t, cc.source)
					file, field := v.mutate(cc)
					want := v.expect(c)
					before := hashTree(t, cc.dir)
					var args []string
					if c.args != nil {
						args = c.args(cc)
					}
					out, errOut, code := execute(t, c.cmd, append([]string{cc.dir, "-o", "json"}, args...)...)
					resText := out
					if c.name == "scan" {
						resText = errOut // scan's data is on stdout, its result on stderr
					}
					res := decodeResult(t, lastLine(resText))
					switch want {
					case wantOK:
						if code != 0 && code != 3 {
							t.Fatalf("exit %d (%s %s): %s; want success because %s", code, res.Outcome, res.Reason, res.Message, v.because)
						}
						if c.name == "scan" {
							rows := corpusRows
							if v.rows != 0 {
								rows = v.rows
							}
							if n := strings.Count(out, "\n"); n != rows {
								t.Fatalf("scan read %d rows, want %d", n, rows)
							}
						}
					default:
						reason := result.ReasonCorruptTable
						if want == wantUnsupported {
							reason = result.ReasonUnsupportedFeature
						}
						if code != 2 || res.Outcome != result.Refused || res.Reason != reason {
							t.Fatalf("exit %d, outcome %s, reason %s: %s\nwant exit 2, refused, %s", code, res.Outcome, res.Reason, res.Message, reason)
						}
						if file != "" && !strings.Contains(res.Message, file) {
							t.Fatalf("the message does not name %s: %s", file, res.Message)
						}
						if field != "" && !strings.Contains(res.Message, field) {
							t.Fatalf("the message does not name the field %s: %s", field, res.Message)
						}
						if after := hashTree(t, cc.dir); !slices.Equal(after, before) {
							t.Fatalf("a refused %s changed the table:\nbefore %v\nafter  %v", c.name, before, after)
						}
					}
				})
			}
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// writeIngestSource writes one CSV file of the demo table's columns for ingest to append.
func writeIngestSource(t *testing.T, dir string) {
	t.Helper()
	must(t, os.MkdirAll(dir, 0o755))
	csv := "order_id,order_ts,order_date,region,customer_id,amount,quantity,status,note\n" +
		"900001,2024-01-05T10:00:00Z,2024-01-05,eu-west,42,12.50,1,shipped,\n"
	must(t, os.WriteFile(filepath.Join(dir, "a.csv"), []byte(csv), 0o644))
}

// hashTree lists every file and directory under dir with a digest of its bytes.
func hashTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			out = append(out, rel+"/")
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		out = append(out, rel+"="+hex.EncodeToString(sum[:8]))
		return nil
	})
	must(t, err)
	return out
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Helpers the variants use to edit the table.

func (c *corpusCase) logFile(name string) string { return filepath.Join(c.dir, "_delta_log", name) }
func commitName(v int) string                    { return fmt.Sprintf("%020d.json", v) }
func checkpointName(v int) string                { return fmt.Sprintf("%020d.checkpoint.parquet", v) }

func (c *corpusCase) read(path string) []byte {
	data, err := os.ReadFile(path)
	must(c.t, err)
	return data
}

func (c *corpusCase) write(path string, data []byte) { must(c.t, os.WriteFile(path, data, 0o644)) }

// lines returns the actions of a commit, one JSON document each.
func (c *corpusCase) lines(v int) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(string(c.read(c.logFile(commitName(v))))))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// editCommit rewrites the lines of commit v that start with prefix ({"add": …) through edit.
func (c *corpusCase) editCommit(v int, prefix string, edit func(string) string) {
	lines := c.lines(v)
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			lines[i], found = edit(l), true
		}
	}
	if !found {
		c.t.Fatalf("commit %d has no %s line", v, prefix)
	}
	c.write(c.logFile(commitName(v)), []byte(strings.Join(lines, "\n")+"\n"))
}

// appendCommit writes the next commit with the given actions and returns its file name.
func (c *corpusCase) appendCommit(actions ...string) string {
	c.latestV++
	name := commitName(c.latestV)
	all := append([]string{`{"commitInfo":{"timestamp":1700000000000,"operation":"WRITE"}}`}, actions...)
	c.write(c.logFile(name), []byte(strings.Join(all, "\n")+"\n"))
	return name
}

// lastAdd returns the add line of the latest commit and the data file it names (relative path).
func (c *corpusCase) lastAdd() (line, path string) {
	for _, l := range c.lines(c.latestV) {
		if strings.HasPrefix(l, `{"add":`) {
			i := strings.Index(l, `"path":"`) + len(`"path":"`)
			return l, l[i : i+strings.IndexByte(l[i:], '"')]
		}
	}
	c.t.Fatalf("commit %d adds nothing", c.latestV)
	return "", ""
}

// metaData returns the table's metaData action (from commit 0).
func (c *corpusCase) metaData() string {
	for _, l := range c.lines(0) {
		if strings.HasPrefix(l, `{"metaData":`) {
			return l
		}
	}
	c.t.Fatal("commit 0 has no metaData")
	return ""
}

func replaceOnce(c *corpusCase, s, old, new string) string {
	if !strings.Contains(s, old) {
		c.t.Fatalf("%q not in %.300s", old, s)
	}
	return strings.Replace(s, old, new, 1)
}
