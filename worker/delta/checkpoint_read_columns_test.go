package delta

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The reference below is the loader as it was before the columnar decoder, the file index and
// the parallel reading: every checkpoint row a types.Struct through the row reader and
// rowConverter, reconciliation in Go maps, everything in one goroutine. The tests load every
// version of every conformance table, and generated checkpoints, both ways and compare.

type refState struct {
	protocol   *Protocol
	metadata   *Metadata
	files      map[FileKey]int
	fileOrder  []*AddFile
	tombstones map[FileKey]int
	tombOrder  []*RemoveFile
	txns       map[string]*SetTransaction
	domains    map[string]*DomainMetadata
	sidecars   []*Sidecar
	cpMeta     *CheckpointMetadata
	in         *interner
}

func (s *refState) apply(a *Action) {
	switch {
	case a.Add != nil:
		a.Add.PartitionValues = s.in.partitionValues(a.Add.PartitionValues)
		k := a.Add.Key()
		if i, ok := s.files[k]; ok {
			s.fileOrder[i] = a.Add
		} else {
			s.files[k] = len(s.fileOrder)
			s.fileOrder = append(s.fileOrder, a.Add)
		}
		if i, ok := s.tombstones[k]; ok {
			s.tombOrder[i] = nil
			delete(s.tombstones, k)
		}
	case a.Remove != nil:
		k := a.Remove.Key()
		if i, ok := s.files[k]; ok {
			s.fileOrder[i] = nil
			delete(s.files, k)
		}
		a.Remove.Stats, a.Remove.Tags = "", nil
		a.Remove.PartitionValues = s.in.partitionValues(a.Remove.PartitionValues)
		if i, ok := s.tombstones[k]; ok {
			s.tombOrder[i] = a.Remove
		} else {
			s.tombstones[k] = len(s.tombOrder)
			s.tombOrder = append(s.tombOrder, a.Remove)
		}
	case a.MetaData != nil:
		s.metadata = a.MetaData
	case a.Protocol != nil:
		s.protocol = a.Protocol
	case a.Txn != nil:
		s.txns[a.Txn.AppID] = a.Txn
	case a.DomainMetadata != nil:
		if a.DomainMetadata.Removed {
			delete(s.domains, a.DomainMetadata.Domain)
		} else {
			s.domains[a.DomainMetadata.Domain] = a.DomainMetadata
		}
	case a.Sidecar != nil:
		s.sidecars = append(s.sidecars, a.Sidecar)
	case a.CheckpointMetadata != nil:
		s.cpMeta = a.CheckpointMetadata
	}
}

// refReadParquet is readParquetActions with the oracle.
func refReadParquet(ctx context.Context, store storage.Store, key string, req parquetReadRequest, in *interner, fn func(*Action)) error {
	f, err := openCheckpointFile(ctx, store, key)
	if err != nil {
		return err
	}
	defer f.Close()
	return oracleRead(ctx, f, req, in, 100, func(a *Action) error { fn(a); return nil })
}

func refLoad(ctx context.Context, tbl *Table, v Version) (*refState, Version, error) {
	l, err := listLog(ctx, tbl.store, "", v)
	if err != nil {
		return nil, 0, err
	}
	seg, err := buildSegment(tbl.Location(), l, v, NoVersion)
	if err != nil {
		return nil, 0, err
	}
	st := &refState{files: map[FileKey]int{}, tombstones: map[FileKey]int{}, txns: map[string]*SetTransaction{},
		domains: map[string]*DomainMetadata{}, in: newInterner()}
	if len(seg.checkpoint) > 0 {
		first := seg.checkpoint[0]
		if first.format == "json" {
			if err := readJSONActions(ctx, tbl.store, first.Key, func(a *Action) error { st.apply(a); return nil }); err != nil {
				return nil, 0, err
			}
		} else {
			for _, p := range seg.checkpoint {
				if err := refReadParquet(ctx, tbl.store, p.Key, parquetReadRequest{columns: nonFileColumns}, st.in, st.apply); err != nil {
					return nil, 0, err
				}
			}
		}
		needs := (&replayState{metadata: st.metadata}).needsStatsParsed()
		req := parquetReadRequest{columns: fileColumns, statsParsed: needs}
		if first.format != "json" {
			for _, p := range seg.checkpoint {
				if err := refReadParquet(ctx, tbl.store, p.Key, req, st.in, st.apply); err != nil {
					return nil, 0, err
				}
			}
		}
		for _, sc := range st.sidecars {
			key, err := sidecarKey(tbl.Location(), sc.Path)
			if err != nil {
				return nil, 0, err
			}
			if err := refReadParquet(ctx, tbl.store, key, req, st.in, func(a *Action) {
				if a.Add != nil || a.Remove != nil {
					st.apply(a)
				}
			}); err != nil {
				return nil, 0, err
			}
		}
	}
	for _, f := range seg.deltas {
		err := readJSONActions(ctx, tbl.store, f.Key, func(a *Action) error {
			if a.CommitInfo == nil && a.Sidecar == nil && a.CheckpointMetadata == nil {
				st.apply(a)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return st, seg.version, nil
}

// assertSnapshotMatchesReference compares everything a snapshot reconstructs from the log.
func assertSnapshotMatchesReference(t *testing.T, snap *Snapshot, ref *refState, refVersion Version) {
	t.Helper()
	if snap.Version() != refVersion {
		t.Fatalf("version %d, reference %d", snap.Version(), refVersion)
	}
	var files []*AddFile
	for _, f := range ref.fileOrder {
		if f != nil {
			files = append(files, f)
		}
	}
	var tombs []*RemoveFile
	for _, r := range ref.tombOrder {
		if r != nil {
			tombs = append(tombs, r)
		}
	}
	if len(files) != snap.NumFiles() {
		t.Fatalf("%d files, reference %d", snap.NumFiles(), len(files))
	}
	for i, f := range snap.Files() {
		if !reflect.DeepEqual(f, files[i]) {
			t.Fatalf("file %d:\n got %+v\nwant %+v", i, *f, *files[i])
		}
		if got, ok := snap.File(f.Key()); !ok || got != f {
			t.Fatalf("File(%v) does not find file %d", f.Key(), i)
		}
	}
	var total int64
	for _, f := range files {
		total += f.Size
		if got, ok := snap.livePath(f.Path); !ok || got.Path != f.Path {
			t.Fatalf("livePath(%s) finds no file", f.Path)
		}
	}
	if snap.TotalBytes() != total {
		t.Fatalf("TotalBytes %d, reference %d", snap.TotalBytes(), total)
	}
	if _, ok := snap.File(FileKey{Path: "no/such/file.parquet"}); ok {
		t.Fatal("File finds a path that is not live")
	}
	if len(tombs) != len(snap.Tombstones()) {
		t.Fatalf("%d tombstones, reference %d", len(snap.Tombstones()), len(tombs))
	}
	for i, r := range snap.Tombstones() {
		if !reflect.DeepEqual(r, tombs[i]) {
			t.Fatalf("tombstone %d:\n got %+v\nwant %+v", i, *r, *tombs[i])
		}
	}
	if !reflect.DeepEqual(snap.Protocol(), *ref.protocol) || !reflect.DeepEqual(snap.Metadata(), *ref.metadata) {
		t.Fatalf("protocol/metadata:\n got %+v %+v\nwant %+v %+v", snap.Protocol(), snap.Metadata(), *ref.protocol, *ref.metadata)
	}
	if len(snap.txns) != len(ref.txns) || len(snap.domains) != len(ref.domains) {
		t.Fatalf("%d txns, %d domains; reference %d, %d", len(snap.txns), len(snap.domains), len(ref.txns), len(ref.domains))
	}
	for k, v := range ref.txns {
		if got, ok := snap.Txn(k); !ok || !reflect.DeepEqual(got, *v) {
			t.Fatalf("txn %s: %+v, reference %+v", k, got, *v)
		}
	}
	for k, v := range ref.domains {
		if got, ok := snap.Domain(k); !ok || !reflect.DeepEqual(got, *v) {
			t.Fatalf("domain %s: %+v, reference %+v", k, got, *v)
		}
	}
}

func TestCheckpointRead_EveryConformanceVersionLoadsAsTheRowReaderDid(t *testing.T) {
	dir, tables := conformanceTables(t)
	ctx := context.Background()
	compared, withCheckpoint := 0, 0
	for _, c := range tables {
		t.Run(c.Source+"/"+c.Name, func(t *testing.T) {
			tbl := NewTable(conformanceStore(t, dir, c))
			l, err := listLog(ctx, tbl.store, "", NoVersion)
			if err != nil || l.maxVersion == NoVersion {
				return
			}
			for v := l.minVersion; v <= l.maxVersion; v++ {
				snap, err := tbl.At(ctx, v)
				ref, refVersion, refErr := refLoad(ctx, tbl, v)
				if refErr == nil && ref.protocol == nil {
					refErr = errors.New("incomplete log")
				}
				if (err == nil) != (refErr == nil) {
					if err != nil && refErr == nil && c.Role == "negative" {
						continue // refused by the checks after replay, which the reference skips
					}
					t.Fatalf("version %d: load error %v, reference error %v", v, err, refErr)
				}
				if err != nil {
					continue
				}
				assertSnapshotMatchesReference(t, snap, ref, refVersion)
				compared++
				if snap.CheckpointVersion() != NoVersion {
					withCheckpoint++
				}
			}
		})
	}
	if compared < 250 || withCheckpoint < 60 {
		t.Fatalf("compared %d versions, %d from a checkpoint", compared, withCheckpoint)
	}
	t.Logf("compared %d versions, %d from a checkpoint", compared, withCheckpoint)
}

// decodeBothWays reads a checkpoint file's actions with the columnar decoder (production's
// f.read) and with the oracle.
func decodeBothWays(t *testing.T, f *ckFile, req parquetReadRequest) (columnar, rows []*Action) {
	t.Helper()
	ctx := context.Background()
	err := f.read(ctx, req, wholeFile, newCkDecoder(maphash.MakeSeed()), func(items []ckItem) error {
		for _, it := range items {
			a := it.act
			if it.add != nil {
				a = &Action{Add: it.add}
			}
			columnar = append(columnar, a)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = oracleRead(ctx, f, req, newInterner(), checkpointBatchSize, func(a *Action) error { rows = append(rows, a); return nil })
	if err != nil {
		t.Fatal(err)
	}
	return columnar, rows
}

func assertSameActions(t *testing.T, got, want []*Action) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d actions, row reader %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("action %d:\n columns %s\n    rows %s", i, actionString(got[i]), actionString(want[i]))
		}
	}
}

func actionString(a *Action) string {
	b, _ := jsonMarshal(a)
	return string(b)
}

var allRequests = []parquetReadRequest{
	{columns: nonFileColumns},
	{columns: fileColumns},
	{columns: fileColumns, statsParsed: true},
	{columns: append(slices.Clone(nonFileColumns), fileColumns...), statsParsed: true},
}

func TestCheckpointRead_ColumnsDecodeEveryConformanceCheckpointAsRows(t *testing.T) {
	root := testutil.ConformanceDir(t)
	var paths []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && strings.Contains(p, "/_delta_log/") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	compared, layouts := 0, map[string]int{}
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		t.Run(rel, func(t *testing.T) {
			store, err := storage.NewLocal(filepath.Dir(p))
			if err != nil {
				t.Fatal(err)
			}
			f, err := openCheckpointFile(context.Background(), store, filepath.Base(p))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, req := range allRequests {
				got, want := decodeBothWays(t, f, req)
				assertSameActions(t, got, want)
				compared++
			}
			layouts[checkpointLayoutOf(f, rel)]++
			if f.hasStatsParsed() {
				layouts["stats_parsed"]++
			}
			if add, ok := f.schema.Field("add").Type.(*types.StructType); ok && add.Field("partitionValues_parsed") != nil {
				layouts["partitionValues_parsed"]++
			}
		})
	}
	if len(paths) < 60 || compared != len(allRequests)*len(paths) {
		t.Fatalf("%d checkpoint files, %d requests compared", len(paths), compared)
	}
	// the kinds of checkpoint files the corpus has, each compared
	for _, kind := range []string{"classic", "multi-part", "v2", "sidecar", "stats_parsed", "partitionValues_parsed"} {
		if layouts[kind] == 0 {
			t.Errorf("no %s checkpoint file compared", kind)
		}
	}
	t.Logf("compared %d checkpoint files: %v", len(paths), layouts)
}

// checkpointLayoutOf says what kind of checkpoint file rel (a path in the corpus) is.
func checkpointLayoutOf(f *ckFile, rel string) string {
	switch name := filepath.Base(rel); {
	case strings.Contains(rel, "/_sidecars/"):
		return "sidecar"
	case f.schema != nil && f.schema.Field("checkpointMetadata") != nil:
		return "v2"
	case strings.Count(name, ".") > 2:
		return "multi-part"
	}
	return "classic"
}

// generatedCheckpointSchema is a checkpoint with every action column, add.stats_parsed and
// add.partitionValues_parsed.
func generatedCheckpointSchema() *types.StructType {
	s := &types.StructType{}
	for _, name := range []string{"txn", "add", "remove", "metaData", "protocol", "domainMetadata", "checkpointMetadata", "sidecar"} {
		col := checkpointColumn(name)
		if name == "add" {
			add := col.Type.(*types.StructType)
			stats := &types.StructType{Fields: []*types.StructField{
				field("numRecords", long()),
				field("minValues", &types.StructType{Fields: []*types.StructField{field("id", int32T()), field("s", str())}}),
				field("nullCount", &types.StructType{Fields: []*types.StructField{field("id", long()), field("s", long())}}),
			}}
			// partitionValues_parsed, which Spark writes next to stats_parsed: both decoders read
			// partitionValues, the string map every checkpoint has, and leave it alone.
			parsed := &types.StructType{Fields: []*types.StructField{field("part", int32T())}}
			add.Fields = append(add.Fields, field("stats_parsed", stats), field("partitionValues_parsed", parsed))
		}
		s.Fields = append(s.Fields, col)
	}
	return s
}

// generatedCheckpointRows makes rows of every action, with nulls in every field, empty and null
// maps and lists, null map values, DVs with and without offsets, rows whose action struct is set
// but its key field null (the next column then wins), and a few repeated and removed paths.
func generatedCheckpointRows(n int, seed uint64) []types.Struct {
	r := rand.New(rand.NewPCG(seed, 1))
	maybe := func(p float64, v types.Value) types.Value {
		if r.Float64() < p {
			return nil
		}
		return v
	}
	strMap := func() types.Value {
		switch r.IntN(5) {
		case 0:
			return nil
		case 1:
			return types.Map{}
		}
		m := types.Map{}
		for i := range 1 + r.IntN(3) {
			m = append(m, types.MapEntry{Key: fmt.Sprintf("k%d", i+r.IntN(2)), Value: maybe(0.2, fmt.Sprintf("v%d", r.IntN(4)))})
		}
		return m
	}
	strList := func() types.Value {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return types.Array{}
		}
		return types.Array{"a", maybe(0.3, "b"), "c"}
	}
	dv := func() types.Value {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return types.Struct{maybe(0.5, ""), nil, nil, nil, nil, nil}
		}
		return types.Struct{"u", fmt.Sprintf("ab^-aqEH.-t@S}K{vb[*k^%d", r.IntN(3)), maybe(0.5, int32(r.IntN(100))), int32(r.IntN(1000)), int64(r.IntN(50)), maybe(0.5, int64(r.IntN(999)))}
	}
	path := func() types.Value { return fmt.Sprintf("part=%d/f-%d.parquet", r.IntN(4), r.IntN(n/2+1)) }
	rows := make([]types.Struct, 0, n)
	for i := range n {
		row := make(types.Struct, 8)
		switch k := r.IntN(20); {
		case k < 11:
			var sp types.Value
			if r.IntN(2) == 0 {
				sp = types.Struct{int64(r.IntN(100)), maybe(0.3, types.Struct{maybe(0.3, int32(r.IntN(9))), maybe(0.3, "x\"y")}), types.Struct{int64(0), nil}}
			}
			row[1] = types.Struct{maybe(0.05, path()), strMap(), maybe(0.1, int64(r.IntN(1<<20))), maybe(0.1, int64(1700000000000+i)),
				maybe(0.1, r.IntN(2) == 0), maybe(0.5, fmt.Sprintf(`{"numRecords":%d}`, i)), strMap(), dv(), maybe(0.5, int64(i*10)), maybe(0.5, int64(3)), maybe(0.8, "liquid"), sp, maybe(0.3, types.Struct{int32(r.IntN(4))})}
			if r.IntN(10) == 0 { // a row with a remove too: the add column comes first
				row[2] = types.Struct{path(), nil, true, nil, nil, nil, nil, nil, nil}
			}
		case k < 15:
			row[2] = types.Struct{maybe(0.05, path()), maybe(0.2, int64(1700000000000+i)), maybe(0.1, r.IntN(2) == 0), maybe(0.3, r.IntN(2) == 0),
				strMap(), maybe(0.3, int64(r.IntN(1000))), dv(), maybe(0.5, int64(i)), maybe(0.5, int64(2))}
		case k == 15:
			row[3] = types.Struct{maybe(0.3, fmt.Sprintf("id-%d", i)), maybe(0.5, "name"), nil, maybe(0.3, types.Struct{maybe(0.3, "parquet"), strMap()}),
				maybe(0.3, `{"type":"struct","fields":[]}`), strList(), strMap(), maybe(0.5, int64(i))}
		case k == 16:
			row[4] = types.Struct{maybe(0.2, int32(r.IntN(4))), maybe(0.2, int32(r.IntN(8))), strList(), strList()}
		case k == 17:
			row[0] = types.Struct{maybe(0.2, fmt.Sprintf("app-%d", r.IntN(5))), maybe(0.2, int64(i)), maybe(0.5, int64(i*2))}
			row[5] = types.Struct{fmt.Sprintf("dom-%d", r.IntN(3)), maybe(0.3, "{}"), maybe(0.3, r.IntN(2) == 0)} // txn wins
		case k == 18:
			row[5] = types.Struct{maybe(0.2, fmt.Sprintf("dom-%d", r.IntN(3))), maybe(0.3, "{}"), maybe(0.3, r.IntN(2) == 0)}
			row[6] = types.Struct{maybe(0.5, int64(7)), strMap()}
		default:
			row[7] = types.Struct{maybe(0.2, fmt.Sprintf("sc-%d.parquet", i)), int64(i), int64(i), strMap()}
		}
		rows = append(rows, row)
	}
	return rows
}

func writeGeneratedCheckpoint(t *testing.T, rows []types.Struct, opts parquetio.WriterOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, generatedCheckpointSchema(), opts)
	if err != nil {
		t.Fatal(err)
	}
	for len(rows) > 0 { // in pieces, so that row groups close at RowGroupRows
		n := min(len(rows), 100)
		if err := w.Write(rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheckpointRead_ColumnsDecodeGeneratedCheckpointsAsRows(t *testing.T) {
	for seed := range uint64(6) {
		rows := generatedCheckpointRows(3000, seed)
		opts := parquetio.WriterOptions{RowGroupRows: int64(700 + 300*(seed%4)), PageBytes: 2048 << (seed % 4),
			Codec: []string{"zstd", "snappy", "gzip", "lz4_raw", "brotli", "uncompressed"}[seed]}
		if seed%2 == 1 {
			opts.DictionaryBytes = -1
		}
		dir := t.TempDir()
		must(t, os.WriteFile(filepath.Join(dir, "cp.parquet"), writeGeneratedCheckpoint(t, rows, opts), 0o644))
		store, err := storage.NewLocal(dir)
		if err != nil {
			t.Fatal(err)
		}
		f, err := openCheckpointFile(context.Background(), store, "cp.parquet")
		if err != nil {
			t.Fatal(err)
		}
		if f.pf.NumRowGroups() < 2 {
			t.Fatalf("%d row groups", f.pf.NumRowGroups())
		}
		for _, req := range allRequests {
			got, want := decodeBothWays(t, f, req)
			if len(want) < 100 {
				t.Fatalf("seed %d, %v: only %d actions", seed, req, len(want))
			}
			assertSameActions(t, got, want)
		}
		f.Close()
	}
}

// generatedTable makes a table whose checkpoint is a generated file (duplicate keys, removes of
// checkpointed adds, tombstones cancelled by later adds, several row groups) followed by commits
// that add and remove some of its files.
func generatedTable(t *testing.T, seed uint64, withMetadata bool) *Table {
	t.Helper()
	b := testTable(t).Partitioned("p")
	if seed%2 == 1 {
		b.Prop(PropWriteStatsAsJSON, "false") // stats_parsed is read, in step with the columns
	}
	tbl, _ := b.Create()
	ctx := context.Background()
	rows := generatedCheckpointRows(4000, seed)
	if withMetadata {
		// The table's own protocol and metadata come first, and no stray metaData, protocol,
		// sidecar or checkpointMetadata rows, so that the table loads.
		snap, err := tbl.Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		p, md := snap.Protocol(), snap.Metadata()
		var rf, wf types.Value
		if p.MinReaderVersion >= 3 {
			rf = toArray(p.ReaderFeatures)
		}
		if p.MinWriterVersion >= 7 {
			wf = toArray(p.WriterFeatures)
		}
		conf := types.Map{}
		for k, v := range md.Configuration {
			conf = append(conf, types.MapEntry{Key: k, Value: v})
		}
		head := []types.Struct{
			{nil, nil, nil, nil, types.Struct{int32(p.MinReaderVersion), int32(p.MinWriterVersion), rf, wf}, nil, nil, nil},
			{nil, nil, nil, types.Struct{md.ID, nil, nil, types.Struct{"parquet", types.Map{}}, md.SchemaString, toArray(md.PartitionColumns), conf, int64(1)}, nil, nil, nil, nil},
		}
		kept := head
		for _, r := range rows {
			if r[3] == nil && r[4] == nil && r[6] == nil && r[7] == nil {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	data := writeGeneratedCheckpoint(t, rows, parquetio.WriterOptions{RowGroupRows: 900, PageBytes: 4096})
	must(t, tbl.Store().Put(ctx, ClassicCheckpointKey(1), data))
	must(t, tbl.Store().Put(ctx, CommitKey(1), []byte(`{"commitInfo":{"operation":"WRITE"}}`+"\n")))
	var commit strings.Builder
	for i := range 30 {
		fmt.Fprintf(&commit, `{"remove":{"path":"part=%d/f-%d.parquet","deletionTimestamp":1,"dataChange":true}}`+"\n", i%4, i)
		fmt.Fprintf(&commit, `{"add":{"path":"part=%d/new-%d.parquet","partitionValues":{"part":"%d"},"size":1,"modificationTime":1,"dataChange":true}}`+"\n", i%4, i, i%4)
	}
	must(t, tbl.Store().Put(ctx, CommitKey(2), []byte(commit.String())))
	return tbl
}

func toArray(s []string) types.Value {
	a := types.Array{}
	for _, x := range s {
		a = append(a, x)
	}
	return a
}

func TestCheckpointRead_GeneratedTablesReconcileAsTheRowReaderDid(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2)) // the parallel decoding is what is tested
	}
	defer func(n int64) { minTaskRows = n }(minTaskRows)
	ctx := context.Background()
	for seed := range uint64(4) {
		// tasks of a few hundred rows: row groups split into ranges, pages skipped
		minTaskRows = []int64{1 << 17, 300, 128, 1000}[seed]
		tbl := generatedTable(t, seed, true)
		for _, v := range []Version{1, 2} {
			snap, err := tbl.At(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			if snap.CheckpointVersion() != 1 {
				t.Fatalf("loaded from checkpoint %d", snap.CheckpointVersion())
			}
			ref, refVersion, err := refLoad(ctx, tbl, v)
			if err != nil {
				t.Fatal(err)
			}
			assertSnapshotMatchesReference(t, snap, ref, refVersion)
			withStats := 0
			for _, f := range snap.Files() {
				if strings.Contains(f.Stats, `"nullCount"`) { // only stats_parsed has them
					withStats++
				}
			}
			if (seed%2 == 1) != (withStats > 100) {
				t.Fatalf("seed %d: only %d files have stats from stats_parsed", seed, withStats)
			}
			if snap.NumFiles() < 500 || len(snap.Tombstones()) < 300 || len(snap.txns) == 0 || len(snap.domains) == 0 {
				t.Fatalf("seed %d v%d: %d files, %d tombstones, %d txns, %d domains: too few to compare", seed, v, snap.NumFiles(), len(snap.Tombstones()), len(snap.txns), len(snap.domains))
			}
		}
		state, err := tbl.State(ctx, NoVersion)
		if err != nil || state.Version != 2 || state.Metadata.ID == "" {
			t.Fatalf("State: %+v %v", state, err)
		}
	}
}

func TestFileIndex_AgreesWithAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seed := maphash.MakeSeed()
	x := newFileIndex(seed, 0)
	var files []*AddFile // positions; nil when deleted
	ref := map[FileKey]int{}
	eq := func(k FileKey) func(int) bool {
		return func(pos int) bool { return files[pos].Path == k.Path && dvIDEquals(files[pos].DeletionVector, k.DVID) }
	}
	for op := range 200000 {
		// few distinct keys and a small table: long probe runs, wrap-around and many deletes
		a := &AddFile{Path: fmt.Sprintf("f%d", r.IntN(3000))}
		if r.IntN(3) == 0 {
			a.DeletionVector = &DeletionVectorDescriptor{StorageType: "u", PathOrInlineDv: fmt.Sprint(r.IntN(3))}
		}
		k := a.Key()
		h := x.hashKey(k)
		if h != fileHash(seed, a.Path, a.DeletionVector) {
			t.Fatal("hashKey and fileHash disagree")
		}
		slot, pos, ok := x.find(h, eq(k))
		want, wantOK := ref[k]
		if ok != wantOK || (ok && pos != want) {
			t.Fatalf("op %d: find(%v) = %d %v, want %d %v", op, k, pos, ok, want, wantOK)
		}
		switch {
		case ok && r.IntN(2) == 0:
			x.delete(slot)
			files[pos] = nil
			delete(ref, k)
		case !ok:
			x.insert(slot, h, len(files))
			ref[k] = len(files)
			files = append(files, a)
		}
		if x.n != len(ref) {
			t.Fatalf("op %d: %d entries, want %d", op, x.n, len(ref))
		}
	}
	// compaction keeps every entry reachable
	m := make([]int32, len(files))
	var live []*AddFile
	for i, f := range files {
		if f != nil {
			m[i] = int32(len(live))
			live = append(live, f)
		}
	}
	x.remap(m)
	files = live
	for k := range ref {
		if _, pos, ok := x.find(x.hashKey(k), eq(k)); !ok || files[pos].Key() != k {
			t.Fatalf("after remap: %v not found", k)
		}
	}
}

func TestDVIDEquals_MatchesUniqueID(t *testing.T) {
	dvs := []*DeletionVectorDescriptor{nil, {}, {StorageType: "u", PathOrInlineDv: "abc"}, {StorageType: "ua", PathOrInlineDv: "bc"},
		{StorageType: "u", PathOrInlineDv: "abc", Offset: ptr(int32(4))}, {StorageType: "u", PathOrInlineDv: "abc@4"}, {StorageType: "i", PathOrInlineDv: "x", Offset: ptr(int32(-1))}}
	for _, a := range dvs {
		for _, b := range dvs {
			if got, want := dvIDEquals(a, b.UniqueID()), a.UniqueID() == b.UniqueID(); got != want {
				t.Errorf("dvIDEquals(%+v, %q) = %v", a, b.UniqueID(), got)
			}
			if got, want := sameDV(a, b), a.UniqueID() == b.UniqueID(); got != want {
				t.Errorf("sameDV(%+v, %+v) = %v", a, b, got)
			}
		}
	}
}
