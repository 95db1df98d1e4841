package delta

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// checkpointWriteBatch is the number of rows handed to the Parquet writer at once; the writer
// itself flushes row groups by size, so a million-file checkpoint streams in bounded memory.
const checkpointWriteBatch = 2048

// Checkpoint writes a classic single-file checkpoint for the snapshot's version and then
// _last_checkpoint. With the v2Checkpoint feature the file follows the V2 spec (a
// checkpointMetadata row, every action inline, no sidecars); otherwise V1. Multi-part
// checkpoints are never written. Statistics are written as JSON and/or as stats_parsed as
// delta.checkpoint.writeStatsAsJson/Struct say (struct stats also when JSON stats are off, so
// that stats are never dropped). Tombstones older than delta.deletedFileRetentionDuration are
// left out, as Spark does.
func (t *Table) Checkpoint(ctx context.Context, snap *Snapshot) error {
	if err := snap.CheckOperation(OpCheckpoint); err != nil {
		return err
	}
	if err := snap.checkCheckpointable(); err != nil {
		return err
	}
	w, err := newCheckpointWriter(snap, t.clock.Now().UnixMilli())
	if err != nil {
		return err
	}
	key := ClassicCheckpointKey(snap.version)
	out, err := t.store.Create(ctx, key)
	if err != nil {
		return fmt.Errorf("table %s: create checkpoint %d: %w", t.Location(), snap.version, err)
	}
	cw := &countingWriter{w: out}
	rows, err := w.write(ctx, cw)
	if err != nil {
		_ = out.Abort()
		return fmt.Errorf("table %s: write checkpoint %d: %w", t.Location(), snap.version, err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("table %s: write checkpoint %d: %w", t.Location(), snap.version, err)
	}
	lc := LastCheckpoint{Version: snap.version, Size: rows, SizeInBytes: ptr(cw.n), NumOfAddFiles: ptr(int64(len(snap.files)))}
	return t.writeLastCheckpoint(ctx, lc)
}

// writeLastCheckpoint moves the hint forward only: a slower writer of an older checkpoint must
// not make readers start further back than necessary.
func (t *Table) writeLastCheckpoint(ctx context.Context, lc LastCheckpoint) error {
	if cur, ok, err := readLastCheckpoint(ctx, t.store); err != nil {
		return err
	} else if ok && cur.Version > lc.Version {
		return nil
	}
	data, err := json.Marshal(lc)
	if err != nil {
		return err
	}
	if err := t.store.Put(ctx, LastCheckpointKey, data); err != nil {
		return fmt.Errorf("table %s: write %s: %w", t.Location(), LastCheckpointKey, err)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkpointWriter turns a snapshot into checkpoint rows.
type checkpointWriter struct {
	snap          *Snapshot
	schema        *types.StructType
	v2            bool
	statsJSON     bool
	statsStruct   *types.StructType // nil when stats_parsed is not written
	statsCols     []statsColumn
	partStruct    *types.StructType // partitionValues_parsed, nil when not written
	minTombstone  int64
	hasDomains    bool
	columnIndexes map[string]int
}

func newCheckpointWriter(snap *Snapshot, nowMillis int64) (*checkpointWriter, error) {
	if snap.rowCountsOnly {
		// The checkpoint would replace every file's statistics by its row count for good.
		return nil, snap.errRowCountsOnly("write a checkpoint")
	}
	asJSON, err := snap.props.WriteStatsAsJSON()
	if err != nil {
		return nil, err
	}
	asStruct, err := snap.props.WriteStatsAsStruct()
	if err != nil {
		return nil, err
	}
	retention, err := snap.props.DeletedFileRetention()
	if err != nil {
		return nil, err
	}
	w := &checkpointWriter{
		snap:         snap,
		v2:           snap.protocol.HasWriterFeature(FeatureV2Checkpoint),
		statsJSON:    asJSON,
		minTombstone: nowMillis - retention.Milliseconds(),
		hasDomains:   len(snap.domains) > 0 || snap.protocol.HasWriterFeature(FeatureDomainMetadata),
	}
	add := checkpointAddStruct()
	if asStruct || !asJSON {
		if w.statsCols, err = snap.statsColumns(); err != nil {
			return nil, err
		}
		w.statsStruct = statsStructType(w.statsCols, snap.protocol.HasWriterFeature(FeatureDeletionVectors))
		add.Fields = append(add.Fields, field("stats_parsed", w.statsStruct))
		if parts := snap.PartitionColumns(); len(parts) > 0 {
			w.partStruct = &types.StructType{}
			for _, f := range parts {
				w.partStruct.Fields = append(w.partStruct.Fields, field(PhysicalName(f, snap.mode), f.Type))
			}
			add.Fields = append(add.Fields, field("partitionValues_parsed", w.partStruct))
		}
	}
	cols := []*types.StructField{checkpointColumn("txn"), field("add", add), checkpointColumn("remove"), checkpointColumn("metaData"), checkpointColumn("protocol")}
	if w.hasDomains {
		cols = append(cols, checkpointColumn("domainMetadata"))
	}
	if w.v2 {
		cols = append(cols, checkpointColumn("checkpointMetadata"))
	}
	w.schema = &types.StructType{Fields: cols}
	w.columnIndexes = map[string]int{}
	for i, f := range cols {
		w.columnIndexes[f.Name] = i
	}
	return w, nil
}

// row returns an empty checkpoint row with one column set.
func (w *checkpointWriter) row(column string, v types.Struct) types.Struct {
	r := make(types.Struct, len(w.schema.Fields))
	r[w.columnIndexes[column]] = v
	return r
}

// write streams every row and returns the number of actions written.
func (w *checkpointWriter) write(ctx context.Context, out io.Writer) (int64, error) {
	pw, err := parquetio.NewWriter(out, w.schema, parquetio.WriterOptions{Codec: "snappy"})
	if err != nil {
		return 0, err
	}
	var batch []types.Struct
	var n int64
	flush := func(force bool) error {
		if len(batch) == 0 || !force && len(batch) < checkpointWriteBatch {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := pw.Write(batch); err != nil {
			return err
		}
		n += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	emit := func(r types.Struct) error {
		batch = append(batch, r)
		return flush(false)
	}
	s := w.snap
	p := s.protocol
	if err := emit(w.row("protocol", types.Struct{int32(p.MinReaderVersion), int32(p.MinWriterVersion), strArrayValue(p.ReaderFeatures, p.MinReaderVersion >= 3), strArrayValue(p.WriterFeatures, p.MinWriterVersion >= 7)})); err != nil {
		return 0, err
	}
	md := s.metadata
	mdRow := types.Struct{md.ID, nullIfEmpty(md.Name), nullIfEmpty(md.Description),
		types.Struct{providerOrDefault(md.Format.Provider), strMapValue(md.Format.Options, true)},
		md.SchemaString, strArrayValue(md.PartitionColumns, true), strMapValue(md.Configuration, true), int64pValue(md.CreatedTime)}
	if err := emit(w.row("metaData", mdRow)); err != nil {
		return 0, err
	}
	if w.v2 {
		if err := emit(w.row("checkpointMetadata", types.Struct{int64(s.version), nil})); err != nil {
			return 0, err
		}
	}
	for _, t := range s.Txns() {
		if err := emit(w.row("txn", types.Struct{t.AppID, t.Version, int64pValue(t.LastUpdated)})); err != nil {
			return 0, err
		}
	}
	if w.hasDomains {
		for _, d := range s.Domains() {
			if err := emit(w.row("domainMetadata", types.Struct{d.Domain, d.Configuration, false})); err != nil {
				return 0, err
			}
		}
	}
	for _, r := range s.tombstones {
		if r.DeletionTimestamp != nil && *r.DeletionTimestamp <= w.minTombstone {
			continue // expired: VACUUM may already have deleted the file
		}
		row := types.Struct{r.Path, int64pValue(r.DeletionTimestamp), r.DataChange, boolpValue(r.ExtendedFileMetadata),
			partitionMapValue(r.PartitionValues, r.ExtendedFileMetadata != nil && *r.ExtendedFileMetadata || r.PartitionValues != nil),
			int64pValue(r.Size), dvValue(r.DeletionVector), int64pValue(r.BaseRowID), int64pValue(r.DefaultRowCommitVersion)}
		if err := emit(w.row("remove", row)); err != nil {
			return 0, err
		}
	}
	for _, a := range s.files {
		row, err := w.addRow(a)
		if err != nil {
			return 0, err
		}
		if err := emit(w.row("add", row)); err != nil {
			return 0, err
		}
	}
	if err := flush(true); err != nil {
		return 0, err
	}
	if _, err := pw.Close(); err != nil {
		return 0, err
	}
	return n, nil
}

func (w *checkpointWriter) addRow(a *AddFile) (types.Struct, error) {
	var stats types.Value
	if w.statsJSON && a.Stats != "" {
		stats = a.Stats
	}
	row := types.Struct{a.Path, partitionMapValue(a.PartitionValues, true), a.Size, a.ModificationTime, a.DataChange, stats,
		strMapValue(a.Tags, false), dvValue(a.DeletionVector), int64pValue(a.BaseRowID), int64pValue(a.DefaultRowCommitVersion),
		nullIfEmpty(a.ClusteringProvider)}
	if w.statsStruct != nil {
		var parsed types.Value
		if a.Stats != "" {
			st, err := ParseStats(a.Stats, w.snap.schema, w.snap.mode)
			if err != nil {
				return nil, fmt.Errorf("file %s: %w", a.Path, err)
			}
			parsed = statsStructValue(w.statsStruct, w.statsCols, st)
		}
		row = append(row, parsed)
		if w.partStruct != nil {
			pv := make(types.Struct, len(w.partStruct.Fields))
			for i, f := range w.snap.PartitionColumns() {
				v, err := w.snap.PartitionValue(a, f.Name)
				if err != nil {
					return nil, err
				}
				pv[i] = v
			}
			row = append(row, pv)
		}
	}
	return row, nil
}

// statsStructValue lays a file's parsed statistics out as a value of statsStructType.
func statsStructValue(st *types.StructType, cols []statsColumn, fs *FileStats) types.Struct {
	byPath := map[string]*ColumnStats{}
	for i := range fs.Columns {
		byPath[pathKey(fs.Columns[i].PhysicalPath)] = &fs.Columns[i]
	}
	out := make(types.Struct, len(st.Fields))
	for i, f := range st.Fields {
		switch f.Name {
		case "numRecords":
			out[i] = int64pValue(fs.NumRecords)
		case "tightBounds":
			out[i] = boolpValue(fs.TightBounds)
		case "minValues", "maxValues", "nullCount":
			out[i] = nestedStats(f.Type.(*types.StructType), nil, byPath, f.Name)
		}
	}
	return out
}

func nestedStats(st *types.StructType, prefix []string, byPath map[string]*ColumnStats, which string) types.Struct {
	out := make(types.Struct, len(st.Fields))
	for i, f := range st.Fields {
		p := append(slices.Clip(prefix), f.Name)
		if sub, ok := f.Type.(*types.StructType); ok {
			out[i] = nestedStats(sub, p, byPath, which)
			continue
		}
		c, ok := byPath[pathKey(p)]
		if !ok {
			continue
		}
		switch which {
		case "minValues":
			out[i] = c.Min
		case "maxValues":
			out[i] = c.Max
		case "nullCount":
			out[i] = int64pValue(c.NullCount)
		}
	}
	return out
}

func pathKey(p []string) string {
	var b bytes.Buffer
	for _, s := range p {
		b.WriteString(s)
		b.WriteByte(0)
	}
	return b.String()
}

func nullIfEmpty(s string) types.Value {
	if s == "" {
		return nil
	}
	return s
}

func providerOrDefault(p string) string {
	if p == "" {
		return "parquet"
	}
	return p
}

func int64pValue(p *int64) types.Value {
	if p == nil {
		return nil
	}
	return *p
}

func boolpValue(p *bool) types.Value {
	if p == nil {
		return nil
	}
	return *p
}

func strArrayValue(s []string, present bool) types.Value {
	if !present {
		return nil
	}
	a := make(types.Array, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

func strMapValue(m map[string]string, present bool) types.Value {
	if m == nil && !present {
		return nil
	}
	out := make(types.Map, 0, len(m))
	for _, k := range sortedKeys(m) {
		out = append(out, types.MapEntry{Key: k, Value: m[k]})
	}
	return out
}

func partitionMapValue(pv PartitionValues, present bool) types.Value {
	if pv == nil && !present {
		return nil
	}
	out := make(types.Map, 0, len(pv))
	for _, e := range pv {
		var v types.Value
		if !e.Null {
			v = e.Value
		}
		out = append(out, types.MapEntry{Key: e.Column, Value: v})
	}
	return out
}

func dvValue(d *DeletionVectorDescriptor) types.Value {
	if d == nil {
		return nil
	}
	var off types.Value
	if d.Offset != nil {
		off = *d.Offset
	}
	var maxRow types.Value
	if d.MaxRowIndex != nil {
		maxRow = *d.MaxRowIndex
	}
	return types.Struct{d.StorageType, d.PathOrInlineDv, off, d.SizeInBytes, d.Cardinality, maxRow}
}
