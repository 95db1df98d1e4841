package duckcheck

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The independent model of `deltakeeper merge` (issue 13): every scenario creates a small table, then runs
// randomised merges through the built binary. After each, the table's rows — read by `deltakeeper scan`,
// which applies deletion vectors — must equal what DuckDB computes in SQL from the previous version's rows
// and the batch (merge_expect_test.go); a merge that must fail (a target row matched twice, new columns under
// failOnNewColumns) must fail as refused and leave the table as it was. Each version's expected rows stay in
// a DuckDB table, and at the end every version is read again by time travel. Where no live file has a DV,
// DuckDB also reads the log's live Parquet files itself.

const envMergeSeed = "DELTAKEEPER_MERGE_SEED"

// mergeStepsPerScenario × the 24 scenarios gives the ≥ 200 merges of issue 13's acceptance.
const mergeStepsPerScenario = 10

var baseModelColumns = []string{"k", "k2", "p", "v", "seq", "del"}

type modelScenario struct {
	name                       string
	dv, partitioned, clustered bool // deletion vectors; partitioned by p; liquid-clustered on the keys
	composite, clusteredKeys   bool // keys (k, k2); batches' keys from one narrow range
	rowTracking                bool // delta.enableRowTracking: row ids checked after every commit (merge_rowids_test.go)
}

func modelScenarios() []modelScenario {
	var out []modelScenario
	for _, dv := range []bool{false, true} {
		for _, layout := range []string{"plain", "partitioned", "clustered"} {
			for _, composite := range []bool{false, true} {
				for _, clusteredKeys := range []bool{false, true} {
					sc := modelScenario{dv: dv, partitioned: layout == "partitioned", clustered: layout == "clustered",
						composite: composite, clusteredKeys: clusteredKeys, rowTracking: layout != "partitioned" && composite == clusteredKeys}
					sc.name = fmt.Sprintf("dv=%t/%s/composite=%t/clusteredKeys=%t", dv, layout, composite, clusteredKeys)
					if sc.rowTracking {
						sc.name += "/rowTracking"
					}
					out = append(out, sc)
				}
			}
		}
	}
	return out
}

// TestMerge_TableEqualsDuckDBModelAfterEveryMerge is the model of issue 13's acceptance.
func TestMerge_TableEqualsDuckDBModelAfterEveryMerge(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(envMergeSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: not a number", envMergeSeed, s)
		}
		seed = v
	}
	fmt.Printf("merge model: seed %d (%s=%d replays it)\n", seed, envMergeSeed, seed)
	deltakeeperBinary(t)
	var counts modelCounts
	t.Run("scenarios", func(t *testing.T) {
		for i, sc := range modelScenarios() {
			t.Run(sc.name, func(t *testing.T) {
				t.Parallel()
				m := newModel(t, sc, seed+uint64(i), &counts)
				for step := range mergeStepsPerScenario {
					m.step = step
					m.runStep()
				}
				m.checkTimeTravel()
			})
		}
	})
	t.Logf("seed %d: %d merges (%d of them as ingest batches, %d expected to fail, %d copying a batch file's pages), %d optimize runs, %d versions read back by time travel, %d versions with deletion vectors",
		seed, counts.merges.Load(), counts.viaIngest.Load(), counts.refused.Load(), counts.copied.Load(), counts.optimizes.Load(), counts.timeTravel.Load(), counts.dvVersions.Load())
	if !t.Failed() && counts.merges.Load() < 200 {
		t.Fatalf("only %d merges ran; issue 13 asks for at least 200", counts.merges.Load())
	}
	if !t.Failed() && counts.copied.Load() == 0 {
		t.Fatal("no upsert copied a batch file's pages (zstd Parquet batches): the model no longer covers that write path")
	}
	if !t.Failed() && counts.dvVersions.Load() == 0 {
		t.Fatal("no version of the tables with deletion vectors enabled has a DV: the merges rewrote files instead of writing DVs")
	}
}

type modelCounts struct{ merges, viaIngest, refused, optimizes, timeTravel, dvVersions, copied atomic.Int64 }

// model is one scenario's table and its expected rows.
type model struct {
	t         *testing.T
	sc        modelScenario
	seed      uint64
	step      int
	db        *sql.DB
	dir       string // the table's directory
	batches   string // the batch files' directory
	landing   string // the ingest streams' source prefixes, one per format under it
	store     storage.Store
	gen       *batchGen
	cols      []string         // the table's columns now, evolved ones included
	keys      []string         // the merge keys
	versions  []delta.Version  // versions whose expected rows are known, each in table exp_<v>
	rowIDs    map[int64]string // the last commit's row identities, with row tracking
	evolved   int
	counts    *modelCounts
	batchFile int
}

func newModel(t *testing.T, sc modelScenario, seed uint64, counts *modelCounts) *model {
	dir := t.TempDir()
	m := &model{t: t, sc: sc, seed: seed, step: -1, db: ducktest.Open(t), dir: filepath.Join(dir, "table"), batches: filepath.Join(dir, "batches"), landing: filepath.Join(dir, "landing"),
		gen:  &batchGen{rng: rand.New(rand.NewPCG(seed, 13)), composite: sc.composite, clustered: sc.clusteredKeys, parts: 4},
		cols: append([]string(nil), baseModelColumns...), keys: []string{"k"}, counts: counts}
	if sc.composite {
		m.keys = []string{"k", "k2"}
	}
	if err := os.MkdirAll(m.batches, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	m.store = store
	long := types.Primitive(types.TypeLong)
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "k", Type: long, Nullable: true}, {Name: "k2", Type: long, Nullable: true}, {Name: "p", Type: long, Nullable: true},
		{Name: "v", Type: types.Primitive(types.TypeString), Nullable: true}, {Name: "seq", Type: long, Nullable: true},
		{Name: "del", Type: types.Primitive(types.TypeBoolean), Nullable: true}}}
	opts := delta.CreateOptions{Schema: schema, Configuration: map[string]string{}}
	if sc.partitioned {
		opts.PartitionColumns = []string{"p"}
	}
	if sc.dv {
		opts.Configuration[delta.PropEnableDeletionVectors] = "true"
	}
	if sc.rowTracking {
		opts.Configuration[delta.PropEnableRowTracking] = "true"
	}
	if _, err := delta.NewTable(store).Create(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	m.exec(`CREATE TABLE next (k BIGINT, k2 BIGINT, p BIGINT, v VARCHAR, seq BIGINT, del BOOLEAN)`)
	m.recordVersion(0)
	m.checkRowIDs(0, rowIDChange{skip: true})
	if sc.clustered {
		if r := runCLI(t, "alter", m.dir, "--cluster-by", strings.Join(m.keys, ","), "-o", "json"); r.code != 0 {
			m.fatalf("alter --cluster-by failed:\n%s", r)
		}
		m.recordVersion(m.latest())
		m.checkRowIDs(m.latest(), rowIDChange{})
	}
	// The first rows: an append of fresh keys.
	m.setPrev()
	// Several thousand rows in row groups of 2048 (DuckDB's smallest), so that deletion vectors and
	// copy-on-write address rows past a file's first row group.
	rows := m.keyedRows(nil, m.gen.freshKeys(nil, 2500+m.gen.rng.IntN(3000), map[key]bool{}), false, false, false)
	m.merge(mergeSpec{mode: "append"}, rows, nil, "parquet-rg", "")
	// Then an upsert of a batch as it is, zstd-compressed as the table's writer compresses: on an
	// unpartitioned table without row tracking the merge copies the batch file's pages.
	m.setPrev()
	existing := existingKeys(t, m.db, sc.composite)
	up := m.keyedRows(m.gen.pickExisting(existing, 40), m.gen.freshKeys(existing, 20, map[key]bool{}), false, true, false)
	m.merge(mergeSpec{mode: "upsert", keys: m.keys}, up, nil, "parquet-zstd", "")
	return m
}

func (m *model) fatalf(format string, args ...any) {
	m.t.Helper()
	m.t.Fatalf("seed %d (%s=%d), step %d: %s", m.seed, envMergeSeed, m.seed-uint64(m.scenarioIndex()), m.step, fmt.Sprintf(format, args...))
}

func (m *model) scenarioIndex() int {
	for i, sc := range modelScenarios() {
		if sc == m.sc {
			return i
		}
	}
	return 0
}

func (m *model) exec(q string, args ...any) {
	m.t.Helper()
	if _, err := m.db.Exec(q, args...); err != nil {
		m.fatalf("DuckDB: %v\n%s", err, q)
	}
}

func (m *model) count(q string) int64 {
	m.t.Helper()
	var n int64
	if err := m.db.QueryRow(q).Scan(&n); err != nil {
		m.fatalf("DuckDB: %v\n%s", err, q)
	}
	return n
}

func (m *model) latest() delta.Version {
	m.t.Helper()
	snap, err := delta.NewTable(m.store).Latest(context.Background())
	if err != nil {
		m.fatalf("reading the table's latest version: %v", err)
	}
	return snap.Version()
}

// recordVersion keeps table next as version v's expected rows.
func (m *model) recordVersion(v delta.Version) {
	m.exec(fmt.Sprintf("CREATE OR REPLACE TABLE exp_%d AS SELECT * FROM next", v))
	m.versions = append(m.versions, v)
}

// setPrev makes table prev (and next, for steps that commit nothing new) the last version's expected rows.
func (m *model) setPrev() {
	last := m.versions[len(m.versions)-1]
	m.exec(fmt.Sprintf("CREATE OR REPLACE TABLE prev AS SELECT * FROM exp_%d", last))
	m.exec("CREATE OR REPLACE TABLE next AS SELECT * FROM prev")
}

// merge writes rows as a batch file, runs the merge and checks the table against the model. newCols are the
// batch's columns beyond the table's; evolution is the --schema-evolution given ("" for none given). A
// non-empty refuse says why the merge must be refused.
func (m *model) merge(spec mergeSpec, rows []batchRow, newCols []string, format, evolution string) {
	m.t.Helper()
	m.counts.merges.Add(1)
	spec.partitionCol = "p"
	batchCols := append(append([]string(nil), m.cols...), newCols...)
	loadBatch(m.t, m.db, batchCols, rows)
	var update []string // the update-method flags merge and ingest share
	update = append(update, "--mode", spec.mode, "-o", "json")
	if len(spec.keys) > 0 {
		update = append(update, "--keys", strings.Join(spec.keys, ","))
	}
	if spec.deleteColumn != "" {
		update = append(update, "--delete-column", spec.deleteColumn)
	}
	if spec.orderBy != "" {
		update = append(update, "--order-by", spec.orderBy)
	}
	if spec.scope != "" {
		update = append(update, "--overwrite-scope", spec.scope)
	}
	if spec.pruned {
		update = append(update, "--partition-pruning", "p")
	}
	if evolution != "" {
		update = append(update, "--schema-evolution", evolution)
	}
	if evolution == "addNewColumns" {
		for _, c := range newCols {
			m.exec(fmt.Sprintf(`ALTER TABLE prev ADD COLUMN "%s" VARCHAR`, c))
		}
		m.cols = batchCols
	}
	spec.columns = m.cols
	before := m.versions[len(m.versions)-1]

	refuse := ""
	if len(newCols) > 0 && (evolution == "" || evolution == "failOnNewColumns") {
		refuse = "new columns " + strings.Join(newCols, ",") + " under failOnNewColumns"
	}
	var ambiguous int64
	if len(spec.keys) > 0 && spec.orderBy == "" && spec.mode != "append" {
		ambiguous = m.count(spec.ambiguousKeysSQL())
		if ambiguous > 0 && refuse == "" {
			refuse = fmt.Sprintf("%d target rows matched by two source rows", ambiguous)
		}
	}
	// A quarter of the merges that must succeed run as one batch of `deltakeeper ingest` with the same
	// update method instead (its stream takes the one new file of the landing prefix); a refused batch
	// would stay pending in the stream, so those always go through merge.
	m.batchFile++
	name := fmt.Sprintf("batch-%03d.%s", m.batchFile, baseFormat(format))
	var args []string
	if refuse == "" && len(newCols) == 0 && m.gen.rng.IntN(4) == 0 {
		m.counts.viaIngest.Add(1)
		// One landing prefix per format: a stream starting takes every file already there.
		landing := filepath.Join(m.landing, baseFormat(format))
		if err := os.MkdirAll(landing, 0o755); err != nil {
			m.t.Fatal(err)
		}
		flags := writeBatch(m.t, m.db, filepath.Join(landing, name), format)
		flags[1] = landing
		args = append(append([]string{"ingest", m.dir}, flags...), update...)
	} else {
		args = append(append([]string{"merge", m.dir}, writeBatch(m.t, m.db, filepath.Join(m.batches, name), format)...), update...)
	}
	run := runCLI(m.t, args...)
	if refuse != "" {
		m.counts.refused.Add(1)
		if run.code != result.ExitRefused {
			m.fatalf("the merge must be refused (exit %d): %s; it ended:\n%s", result.ExitRefused, refuse, run)
		}
		if ambiguous > 0 && len(newCols) == 0 {
			m.checkNamesAmbiguousKey(spec, run)
		}
		if v := m.latest(); v != before {
			m.fatalf("a refused merge committed version %d (the table was at %d):\n%s", v, before, run)
		}
		m.checkVersion(before, true)
		return
	}
	if run.code != result.ExitSucceeded && run.code != result.ExitNothingToDo {
		m.fatalf("the merge failed:\n%s", run)
	}
	var res struct {
		Merge *struct {
			FilesCopied int `json:"filesCopied"`
		} `json:"merge"`
	}
	if lines := strings.Split(strings.TrimSpace(run.stdout), "\n"); json.Unmarshal([]byte(lines[len(lines)-1]), &res) == nil && res.Merge != nil && res.Merge.FilesCopied > 0 {
		m.counts.copied.Add(1)
	}
	m.exec("CREATE OR REPLACE TABLE next AS " + spec.expectedSQL())
	m.settle(run, before, m.mergeChange(spec, evolution == "addNewColumns" && len(newCols) > 0))
}

// settle checks the command's commit against table next, the model's rows after it: a new version holding
// them, or no commit where next equals prev.
func (m *model) settle(run cliRun, before delta.Version, change rowIDChange) {
	m.t.Helper()
	v := m.latest()
	if v == before {
		// No commit: only right when the merge changes no row.
		if diff := m.count(`SELECT (SELECT count(*) FROM (SELECT * FROM next EXCEPT ALL SELECT * FROM prev)) +
			(SELECT count(*) FROM (SELECT * FROM prev EXCEPT ALL SELECT * FROM next))`); diff > 0 {
			m.fatalf("nothing was committed, but %d rows should have changed:\n%s", diff, run)
		}
		m.checkVersion(before, true)
		return
	}
	if v != before+1 {
		m.t.Logf("%s committed versions %d..%d; only the last is checked", run.args[0], before+1, v)
	}
	m.recordVersion(v)
	m.checkVersion(v, true)
	m.checkRowIDs(v, change)
}

// checkNamesAmbiguousKey checks that a refused ambiguous merge names one of the keys matched twice.
func (m *model) checkNamesAmbiguousKey(spec mergeSpec, run cliRun) {
	rows, err := m.db.Query(fmt.Sprintf(`SELECT DISTINCT t.k::VARCHAR FROM prev t JOIN batch s ON %s
		GROUP BY t.rowid, t.k HAVING count(*) > 1`, spec.matchOn()))
	if err != nil {
		m.fatalf("DuckDB: %v", err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			m.fatalf("DuckDB: %v", err)
		}
		if strings.Contains(run.stdout+run.stderr, k) {
			return
		}
		keys = append(keys, k)
	}
	m.fatalf("the refused merge names none of the keys matched twice (k = %s):\n%s", strings.Join(keys, ", "), run)
}
