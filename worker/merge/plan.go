package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// scanParallelism is how many target files have their key columns read at once.
const scanParallelism = 4

// pruner decides from the log alone whether a target file might hold a key of the batch: partition
// values against the batch's (key partition columns and --partition-pruning columns), then each
// key column's min/max against the sorted distinct keys. It also serves as the commit's read
// predicate, so it is applied to files concurrent writers add as well.
type pruner struct {
	snap *delta.Snapshot
	keys []*types.StructField // key columns of the table, in key order
	// keyParts are the positions (in keys) of partition columns, with the batch's allowed tuples.
	keyParts   []int
	partTuples map[string]bool
	// pinned are --partition-pruning columns with the batch's distinct values (nulls as "\x00").
	pinned       []string
	pinnedValues []map[string]bool
	sorted       *sortedKeys
}

func newPruner(snap *delta.Snapshot, p *prepared, o *Options) (*pruner, error) {
	pr := &pruner{snap: snap}
	table := snap.Schema()
	isPart := func(name string) bool {
		return slices.ContainsFunc(snap.Metadata().PartitionColumns, func(c string) bool { return strings.EqualFold(c, name) })
	}
	for j, i := range p.keyIdx {
		name := p.schema.Fields[i].Name
		if table.FieldIndex(name) < 0 {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("key column %q is not a column of table %s (columns: %s); a key must exist in source and target", name, snap.Table().Location(), columnNames(table)))
		}
		pr.keys = append(pr.keys, table.Fields[table.FieldIndex(name)])
		if isPart(name) {
			pr.keyParts = append(pr.keyParts, j)
		}
	}
	live := func(n int) bool { return p.live[n] }
	if len(pr.keyParts) > 0 {
		pr.partTuples = map[string]bool{}
		for n := range p.src.len() {
			if !live(n) {
				continue
			}
			if _, ok := p.src.keyOf(n, p.keyIdx); !ok {
				continue
			}
			var b []byte
			for _, j := range pr.keyParts {
				b = appendValue(b, p.src.value(n, p.keyIdx[j]))
			}
			pr.partTuples[string(b)] = true
		}
	}
	for _, name := range o.PartitionPruning {
		if !isPart(name) {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("--partition-pruning column %q is not a partition column of table %s (partition columns: %s)", name, snap.Table().Location(), strings.Join(snap.Metadata().PartitionColumns, ", ")))
		}
		i := columnIndex(p.schema, name)
		// Every row of the batch names a partition, also the rows that --order-by deduplicates away: a key
		// that moved partition within the batch was where its older rows say, and its target row is
		// there. Taking only the winners' partitions would miss that row and insert the key twice.
		vals := map[string]bool{}
		for n := range p.src.len() {
			vals[valueKey(p.src.value(n, i))] = true
		}
		pr.pinned = append(pr.pinned, p.schema.Fields[i].Name)
		pr.pinnedValues = append(pr.pinnedValues, vals)
	}
	keyTypes := make([]types.DataType, len(pr.keys))
	for j, k := range pr.keys {
		keyTypes[j] = k.Type
	}
	if p.longBits != nil {
		pr.sorted = &sortedKeys{kind: sortedLongs, comparable: true, longs: p.distinctLongs()}
		return pr, nil
	}
	sk, err := newSortedKeys(p.src, p.keyIdx, keyTypes, live)
	if err != nil {
		return nil, err
	}
	pr.sorted = sk
	return pr, nil
}

func valueKey(v types.Value) string {
	if v == nil {
		return "\x00"
	}
	return string(appendValue(nil, v))
}

// byPartition reports whether the file's partition values allow a match.
func (pr *pruner) byPartition(f *delta.AddFile) bool {
	if pr.sorted.count() == 0 {
		return false // no non-null key: nothing can match
	}
	if pr.partTuples != nil {
		var b []byte
		for _, j := range pr.keyParts {
			v, err := pr.snap.PartitionValue(f, pr.keys[j].Name)
			if err != nil {
				return true
			}
			if v == nil {
				return false
			}
			b = appendValue(b, v)
		}
		if !pr.partTuples[string(b)] {
			return false
		}
	}
	for n, name := range pr.pinned {
		v, err := pr.snap.PartitionValue(f, name)
		if err != nil {
			return true
		}
		if !pr.pinnedValues[n][valueKey(v)] {
			return false
		}
	}
	return true
}

// byStats reports whether some batch key falls within the file's ranges of every key column.
func (pr *pruner) byStats(f *delta.AddFile) bool {
	ranges := make([]colRange, len(pr.keys))
	var stats *delta.FileStats
	statsRead := false
	for j, k := range pr.keys {
		if slices.Contains(pr.keyParts, j) {
			v, err := pr.snap.PartitionValue(f, k.Name)
			switch {
			case err != nil:
			case v == nil:
				ranges[j].noneMatch = true
			default:
				ranges[j].lo, ranges[j].hi = v, v
			}
			continue
		}
		if !statsRead {
			statsRead = true
			if s, ok, err := pr.snap.Stats(f); err == nil && ok {
				stats = s
			}
		}
		if stats == nil {
			continue
		}
		c, ok := stats.Column(k.Name)
		if !ok {
			continue
		}
		if c.NullCount != nil && stats.NumRecords != nil && *c.NullCount == *stats.NumRecords {
			ranges[j].noneMatch = true
			continue
		}
		ranges[j].lo, ranges[j].hi = c.Min, c.MaxUpperBound()
	}
	return pr.sorted.anyInRanges(ranges)
}

// mightHold is the commit's read predicate: the file may hold one of the batch's keys.
func (pr *pruner) mightHold(f *delta.AddFile) bool { return pr.byPartition(f) && pr.byStats(f) }

// readPredicate is mightHold, answered from the plan's verdicts for the files it judged.
func (pl *plan) readPredicate(pr *pruner) func(*delta.AddFile) bool {
	return func(f *delta.AddFile) bool {
		if v, ok := pl.judged[f]; ok {
			return v
		}
		return pr.mightHold(f)
	}
}

// fileMatch is one target file's matched rows: physical positions and the source row of each.
type fileMatch struct {
	file *delta.AddFile
	pos  []int64
	src  []int32
}

// plan is the outcome of pruning and key matching on one snapshot.
type plan struct {
	total, prunedPartition, prunedStats int
	scanned                             []*delta.AddFile
	// judged holds the verdict of pruning for every file of the snapshot (true: scanned), so the
	// commit's read predicate parses no statistics twice.
	judged      map[*delta.AddFile]bool
	touched     []*fileMatch
	matched     []bool // per source row: matched a target row
	rowsMatched int64
}

// planMatches prunes the snapshot's files and reads the key columns of the survivors to find the
// matched rows. A target row matched by two source rows is an error naming the key.
func planMatches(ctx context.Context, snap *delta.Snapshot, p *prepared, pr *pruner) (*plan, error) {
	pl := &plan{matched: make([]bool, p.src.len())}
	files := snap.Files()
	verdicts := prune(files, pr)
	pl.judged = make(map[*delta.AddFile]bool, len(files))
	for n, f := range files {
		pl.total++
		pl.judged[f] = verdicts[n] == mightMatch
		switch verdicts[n] {
		case prunedByPartition:
			pl.prunedPartition++
		case prunedByStats:
			pl.prunedStats++
		default:
			pl.scanned = append(pl.scanned, f)
		}
	}
	results := make([]*fileMatch, len(pl.scanned))
	errs := make([]error, len(pl.scanned))
	var wg sync.WaitGroup
	sem := make(chan struct{}, scanParallelism)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for n, f := range pl.scanned {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[n], errs[n] = matchFile(ctx, snap, f, p, pr)
			if errs[n] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, m := range results {
		if m == nil || len(m.pos) == 0 {
			continue
		}
		pl.touched = append(pl.touched, m)
		pl.rowsMatched += int64(len(m.pos))
		for _, s := range m.src {
			pl.matched[s] = true
		}
	}
	return pl, nil
}

// A file's pruning verdict.
const (
	mightMatch uint8 = iota
	prunedByPartition
	prunedByStats
)

// pruneChunk is how many files one goroutine prunes at a time.
const pruneChunk = 256

// prune judges every file by its partition values and statistics, on every core: parsing the
// statistics JSON of each file is most of it, and a table of thousands of files is common.
func prune(files []*delta.AddFile, pr *pruner) []uint8 {
	verdicts := make([]uint8, len(files))
	judge := func(lo, hi int) {
		for n := lo; n < hi; n++ {
			switch f := files[n]; {
			case !pr.byPartition(f):
				verdicts[n] = prunedByPartition
			case !pr.byStats(f):
				verdicts[n] = prunedByStats
			}
		}
	}
	if len(files) <= pruneChunk || runtime.GOMAXPROCS(0) < 2 {
		judge(0, len(files))
		return verdicts
	}
	var wg sync.WaitGroup
	chunks := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for lo := range chunks {
				judge(lo, min(lo+pruneChunk, len(files)))
			}
		})
	}
	for lo := 0; lo < len(files); lo += pruneChunk {
		chunks <- lo
	}
	close(chunks)
	wg.Wait()
	return verdicts
}

// matchFile reads only the key columns of one target file (partition keys come from the log) and
// returns the positions whose key the batch holds.
func matchFile(ctx context.Context, snap *delta.Snapshot, f *delta.AddFile, p *prepared, pr *pruner) (*fileMatch, error) {
	tuple := make(types.Struct, len(pr.keys))
	fileSchema := &types.StructType{}
	var fromFile []int // key position of each file column
	physical := snap.PhysicalSchema()
	for j, k := range pr.keys {
		if slices.Contains(pr.keyParts, j) {
			v, err := snap.PartitionValue(f, k.Name)
			if err != nil {
				return nil, fmt.Errorf("data file %s: partition value of %s: %w", f.Path, k.Name, err)
			}
			tuple[j] = v
			continue
		}
		fileSchema.Fields = append(fileSchema.Fields, physical.Fields[snap.Schema().FieldIndex(k.Name)])
		fromFile = append(fromFile, j)
	}
	m := &fileMatch{file: f}
	var dupErr error
	record := visitSrcs(m, p, f, &dupErr)
	visit := func(pos int64) {
		if first, n := p.lookup(tuple); n > 0 {
			record(pos, first, n)
		}
	}
	pf, closeFile, deleted, err := openData(ctx, snap, f)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	if len(fileSchema.Fields) == 0 {
		// Every key is a partition column: each live row of the file matches alike.
		for pos := range pf.NumRows() {
			if deleted == nil || !deleted.Contains(uint64(pos)) {
				visit(pos)
			}
		}
		return m, dupErr
	}
	if p.longKey() && len(fromFile) == 1 {
		m.reserve(snap, f, pr, pf.NumRows())
		done, err := matchLongs(ctx, pf, fileSchema, deleted, p, record)
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		if done {
			return m, dupErr
		}
	}
	rows, err := pf.Rows(ctx, fileSchema, parquetio.ReadOptions{
		MatchFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID,
		Deleted:       deleted,
		WithRowIndex:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	defer rows.Close()
	for {
		b, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return m, dupErr
		}
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		for n, r := range b.Rows {
			for c, j := range fromFile {
				tuple[j] = r[c]
			}
			visit(b.RowIndexes[n])
		}
		if dupErr != nil {
			return m, dupErr
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// reserve sizes the match lists of a file with one integer key column for the batch keys within
// the file's key range, when they are fewer than its rows: a file of a clustered table matching
// tens of thousands of rows would otherwise grow them a quarter at a time, which cost a third of
// the key matching (the copies, and fresh memory to fault in). A range spanning most of the batch
// (random keys) says nothing about how many rows match, and leaves the lists to grow.
func (m *fileMatch) reserve(snap *delta.Snapshot, f *delta.AddFile, pr *pruner, rows int64) {
	if pr.sorted.kind != sortedLongs || len(pr.keys) != 1 {
		return
	}
	stats, ok, err := snap.Stats(f)
	if err != nil || !ok {
		return
	}
	c, ok := stats.Column(pr.keys[0].Name)
	if !ok {
		return
	}
	lo, okLo := ordinal(c.Min)
	hi, okHi := ordinal(c.MaxUpperBound())
	if !okLo || !okHi {
		return
	}
	if n := int64(pr.sorted.longsIn(lo, hi)); n > 0 && n <= rows {
		m.pos, m.src = make([]int64, 0, n), make([]int32, 0, n)
	}
}

// visitSrcs records a match of the target row at pos with the batch row first (n batch rows hold
// its key), flagging a row matched twice.
func visitSrcs(m *fileMatch, p *prepared, f *delta.AddFile, dupErr *error) func(pos int64, first int32, n int) {
	return func(pos int64, first int32, n int) {
		if n > 1 && *dupErr == nil {
			*dupErr = result.Refuse(result.ReasonBadFile, fmt.Errorf("%d source rows match the same target row (key %s, data file %s): deduplicate the batch, or give --order-by to keep the last row of each key",
				n, describeKey(p.src.row(int(first)), p.keyIdx, p.schema), f.Path))
		}
		m.pos = append(m.pos, pos)
		m.src = append(m.src, first)
	}
}

// matchLongs is matchFile's fast path for one integer key column: the column is decoded as a vector
// of longs and probed in the batch's integer key index (findLong), with no row values or string keys
// built. done=false means the columnar reader does not take the file's layout (the caller reads rows
// instead).
func matchLongs(ctx context.Context, pf *parquetio.File, schema *types.StructType, deleted *roaring64.Bitmap, p *prepared, visit func(int64, int32, int)) (bool, error) {
	cr, err := pf.Columns(ctx, schema, parquetio.ColumnOptions{})
	if errors.Is(err, parquetio.ErrColumnsUnsupported) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer cr.Close()
	var pos int64
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		vec := b.Column(0)
		for i := range b.Len() {
			at := pos + int64(i)
			if vec.IsNull(i) {
				continue
			}
			first, ok := p.findLong(vec.Long(i))
			if ok && (deleted == nil || !deleted.Contains(uint64(at))) {
				visit(at, first, p.chainLen(first))
			}
		}
		pos += int64(b.Len())
	}
}
