package delta

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"unsafe"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The columnar checkpoint decoder is the one decoder of checkpoint and sidecar actions: every
// Parquet checkpoint part and sidecar, V1 or V2, with or without stats_parsed, goes through it
// (ckFile.read). It builds actions straight from parquetio column batches (File.Columns): no
// types.Struct per row, no boxed values, no map per partitionValues. A checkpoint action field is
// added here and in checkpointColumn; the test oracle (checkpoint_oracle_test.go, rows through
// the logical reader) gets it too so that the differential tests compare it on every conformance
// checkpoint and on generated and foreign-written files.
//
// What it keeps is laid out for a million files: AddFiles come from slabs, their path and stats
// strings from shared byte chunks, equal partitionValues are one shared slice. A file retained
// beyond its snapshot keeps its slab and chunks alive (a few hundred KiB), which is the price of a
// snapshot that costs a third less memory and GC work.

// ckItem is one decoded action: adds, the bulk of a checkpoint, travel without an Action around
// them.
type ckItem struct {
	add *AddFile
	act *Action
	// h is the hash of the file's key (fileHash) for adds and removes, computed by the decoding
	// goroutine rather than by the one that reconciles.
	h uint64
}

// ckDecoder turns the column batches of one checkpoint file into actions. It is used by one
// goroutine at a time; parallel readers each have their own.
type ckDecoder struct {
	seed  maphash.Seed
	in    *interner
	strs  stringArena
	adds  []AddFile // slab: the next AddFiles
	longs []int64   // slab for *int64 fields
	// pvs shares one PartitionValues slice between the files of a partition, keyed by the raw
	// map entries (pvKey).
	pvs   map[string]PartitionValues
	pvKey []byte
	// rowCountsOnly keeps only numRecords of the statistics (LoadOptions.RowCountsOnly).
	rowCountsOnly bool
}

// pvCacheLimit bounds the partitionValues cache like the interner: beyond it, high-cardinality
// values are built per file as before.
const pvCacheLimit = 1 << 16

// Slab and chunk sizes: large enough that allocation stops showing in profiles, small enough
// that a few files kept past their snapshot pin little.
const (
	addSlab    = 512
	longSlab   = 1024
	arenaBytes = 128 << 10
)

func newCkDecoder(seed maphash.Seed) *ckDecoder {
	return &ckDecoder{seed: seed, in: newInterner(), pvs: make(map[string]PartitionValues)}
}

// stringArena copies strings into shared chunks: one allocation per chunk instead of one per
// string. The bytes are never written again once a string points at them.
type stringArena struct{ buf []byte }

func (a *stringArena) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > cap(a.buf)-len(a.buf) {
		if len(b) > arenaBytes/8 {
			return string(b)
		}
		a.buf = make([]byte, 0, arenaBytes)
	}
	start := len(a.buf)
	a.buf = append(a.buf, b...)
	return unsafe.String(&a.buf[start], len(b))
}

// bytes interns a string given as bytes; the lookup does not allocate.
func (in *interner) bytes(b []byte) string {
	if in == nil {
		return string(b)
	}
	if v, ok := in.m[string(b)]; ok {
		return v
	}
	return in.str(string(b))
}

func (d *ckDecoder) newAdd() *AddFile {
	if len(d.adds) == 0 {
		d.adds = make([]AddFile, addSlab)
	}
	a := &d.adds[0]
	d.adds = d.adds[1:]
	return a
}

// stats keeps an add's statistics string: all of it, or its row count alone.
func (d *ckDecoder) stats(b []byte) string {
	if d.rowCountsOnly {
		return rowCountStatsBytes(d.in, b)
	}
	return d.strs.str(b)
}

// long returns element i of v as a fresh *int64, nil when null.
func (d *ckDecoder) long(v *parquetio.Vector, i int) *int64 {
	if v.IsNull(i) {
		return nil
	}
	if len(d.longs) == 0 {
		d.longs = make([]int64, longSlab)
	}
	p := &d.longs[0]
	d.longs = d.longs[1:]
	*p = v.Long(i)
	return p
}

func boolAt(v *parquetio.Vector, i int) *bool {
	if v.IsNull(i) {
		return nil
	}
	b := v.Bool(i)
	return &b
}

// vstr is a string that is not kept per file (action metadata): a plain copy.
func vstr(v *parquetio.Vector, i int) string { return string(v.Bytes(i)) }

// strMap is view.strMap: nil for a null map, null values read as "".
func (d *ckDecoder) strMap(v *parquetio.Vector, i int) map[string]string {
	if v.IsNull(i) {
		return nil
	}
	start, end := v.Entries(i)
	out := make(map[string]string, end-start)
	for e := start; e < end; e++ {
		out[d.in.bytes(v.Key().Bytes(e))] = d.strs.str(v.Value().Bytes(e))
	}
	return out
}

// vstrArray is view.strArray: nil for a null list, null elements dropped.
func vstrArray(v *parquetio.Vector, i int) []string {
	if v.IsNull(i) {
		return nil
	}
	start, end := v.Entries(i)
	out := make([]string, 0, end-start)
	for e := start; e < end; e++ {
		if !v.Elem().IsNull(e) {
			out = append(out, vstr(v.Elem(), e))
		}
	}
	return out
}

// partitionValues decodes a partitionValues map (null values are PartitionValue.Null), sorted by
// column, with equal maps sharing one slice.
func (d *ckDecoder) partitionValues(v *parquetio.Vector, i int) PartitionValues {
	if v.IsNull(i) {
		return nil
	}
	start, end := v.Entries(i)
	if start == end {
		return PartitionValues{}
	}
	keys, vals := v.Key(), v.Value()
	k := d.pvKey[:0]
	for e := start; e < end; e++ {
		kb := keys.Bytes(e)
		k = binary.AppendUvarint(k, uint64(len(kb)))
		k = append(k, kb...)
		if vals.IsNull(e) {
			k = append(k, 0)
		} else {
			vb := vals.Bytes(e)
			k = append(k, 1)
			k = binary.AppendUvarint(k, uint64(len(vb)))
			k = append(k, vb...)
		}
	}
	d.pvKey = k
	if pv, ok := d.pvs[string(k)]; ok {
		return pv
	}
	pv := make(PartitionValues, 0, end-start)
	for e := start; e < end; e++ {
		p := PartitionValue{Column: d.in.bytes(keys.Bytes(e))}
		if vals.IsNull(e) {
			p.Null = true
		} else {
			p.Value = d.in.bytes(vals.Bytes(e))
		}
		pv = append(pv, p)
	}
	pv.sortByColumn()
	if len(d.pvs) < pvCacheLimit {
		d.pvs[string(k)] = pv
	}
	return pv
}

// vecField returns the vector of a struct field by name, an all-null vector when the read schema
// lacks it.
func vecField(v *parquetio.Vector, t *types.StructType, name string) *parquetio.Vector {
	if i := t.FieldIndex(name); i >= 0 {
		return v.Field(i)
	}
	return &parquetio.Vector{}
}

// dvVectors are the fields of a deletionVector struct.
type dvVectors struct {
	v, storageType, pathOrInlineDv, offset, sizeInBytes, cardinality, maxRowIndex *parquetio.Vector
}

func newDVVectors(parent *parquetio.Vector, pt *types.StructType) dvVectors {
	v := vecField(parent, pt, "deletionVector")
	t, _ := pt.Fields[max(pt.FieldIndex("deletionVector"), 0)].Type.(*types.StructType)
	if v.Kind() != parquetio.VecStruct || t == nil {
		m := &parquetio.Vector{}
		return dvVectors{m, m, m, m, m, m, m}
	}
	return dvVectors{v, vecField(v, t, "storageType"), vecField(v, t, "pathOrInlineDv"), vecField(v, t, "offset"),
		vecField(v, t, "sizeInBytes"), vecField(v, t, "cardinality"), vecField(v, t, "maxRowIndex")}
}

// dv decodes a deletion vector descriptor: nil when the struct or its storageType is null.
func (d *ckDecoder) dv(c *dvVectors, i int) *DeletionVectorDescriptor {
	if c.v.IsNull(i) || len(c.storageType.Bytes(i)) == 0 {
		return nil
	}
	dv := &DeletionVectorDescriptor{
		StorageType:    d.in.bytes(c.storageType.Bytes(i)),
		PathOrInlineDv: d.strs.str(c.pathOrInlineDv.Bytes(i)),
		SizeInBytes:    int32(c.sizeInBytes.Long(i)),
		Cardinality:    c.cardinality.Long(i),
		MaxRowIndex:    d.long(c.maxRowIndex, i),
	}
	if !c.offset.IsNull(i) {
		dv.Offset = ptr(int32(c.offset.Long(i)))
	}
	return dv
}

// decode appends the actions of a batch in row order.
func (d *ckDecoder) decode(b *parquetio.ColumnBatch, schema *types.StructType, sp *statsParsedRows, out []ckItem) ([]ckItem, error) {
	actions := make([]func(i int) (ckItem, bool, error), len(schema.Fields))
	for j, f := range schema.Fields {
		actions[j] = d.columnDecoder(f, b.Column(j), sp)
	}
	for i := range b.Len() {
		if sp != nil {
			// the reader of stats_parsed moves in step, one row per row
			if err := sp.next(); err != nil {
				return out, err
			}
		}
		for j := range actions {
			if b.Column(j).IsNull(i) {
				continue
			}
			it, ok, err := actions[j](i)
			if err != nil {
				return out, err
			}
			if ok {
				it.h = d.hash(it)
				out = append(out, it)
				break
			}
		}
	}
	return out, nil
}

// hash is the key hash of an add or remove (0 for other actions).
func (d *ckDecoder) hash(it ckItem) uint64 {
	switch {
	case it.add != nil:
		return fileHash(d.seed, it.add.Path, it.add.DeletionVector)
	case it.act.Add != nil:
		return fileHash(d.seed, it.act.Add.Path, it.act.Add.DeletionVector)
	case it.act.Remove != nil:
		return fileHash(d.seed, it.act.Remove.Path, it.act.Remove.DeletionVector)
	}
	return 0
}

// columnDecoder returns the decoder of one top-level column: the action of row i (whose column
// value is not null), or false when the key field is null and the next column gets its turn.
func (d *ckDecoder) columnDecoder(f *types.StructField, v *parquetio.Vector, sp *statsParsedRows) func(i int) (ckItem, bool, error) {
	t, _ := f.Type.(*types.StructType)
	if t == nil || v.Kind() != parquetio.VecStruct {
		return func(int) (ckItem, bool, error) { return ckItem{}, false, nil }
	}
	get := func(name string) *parquetio.Vector { return vecField(v, t, name) }
	switch f.Name {
	case "add":
		path, pv, size, mtime, dc, stats, tags := get("path"), get("partitionValues"), get("size"), get("modificationTime"), get("dataChange"), get("stats"), get("tags")
		baseRowID, drcv, cp := get("baseRowId"), get("defaultRowCommitVersion"), get("clusteringProvider")
		dvc := newDVVectors(v, t)
		return func(i int) (ckItem, bool, error) {
			if path.IsNull(i) {
				return ckItem{}, false, nil
			}
			a := d.newAdd()
			*a = AddFile{
				Path:                    d.strs.str(path.Bytes(i)),
				PartitionValues:         d.partitionValues(pv, i),
				Size:                    size.Long(i),
				ModificationTime:        mtime.Long(i),
				DataChange:              dc.Bool(i),
				Stats:                   d.stats(stats.Bytes(i)),
				Tags:                    d.strMap(tags, i),
				DeletionVector:          d.dv(&dvc, i),
				BaseRowID:               d.long(baseRowID, i),
				DefaultRowCommitVersion: d.long(drcv, i),
				ClusteringProvider:      d.in.bytes(cp.Bytes(i)),
			}
			if a.Stats == "" && sp != nil && sp.current != nil {
				js, err := appendValueJSON(nil, sp.t, sp.current)
				if err != nil {
					return ckItem{}, false, fmt.Errorf("add %s: stats_parsed: %w", a.Path, err)
				}
				a.Stats = string(js)
				if d.rowCountsOnly {
					a.Stats = rowCountStats(d.in, a.Stats)
				}
			}
			return ckItem{add: a}, true, nil
		}
	case "remove":
		path, dts, dc, ext, pv, size := get("path"), get("deletionTimestamp"), get("dataChange"), get("extendedFileMetadata"), get("partitionValues"), get("size")
		baseRowID, drcv := get("baseRowId"), get("defaultRowCommitVersion")
		dvc := newDVVectors(v, t)
		return func(i int) (ckItem, bool, error) {
			if path.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{Remove: &RemoveFile{
				Path:                    d.strs.str(path.Bytes(i)),
				DeletionTimestamp:       d.long(dts, i),
				DataChange:              dc.Bool(i),
				ExtendedFileMetadata:    boolAt(ext, i),
				PartitionValues:         d.partitionValues(pv, i),
				Size:                    d.long(size, i),
				DeletionVector:          d.dv(&dvc, i),
				BaseRowID:               d.long(baseRowID, i),
				DefaultRowCommitVersion: d.long(drcv, i),
			}}}, true, nil
		}
	case "metaData":
		id, name, desc, schema, pcols, conf, created := get("id"), get("name"), get("description"), get("schemaString"), get("partitionColumns"), get("configuration"), get("createdTime")
		format := get("format")
		var provider, options *parquetio.Vector
		if ft, _ := t.Fields[max(t.FieldIndex("format"), 0)].Type.(*types.StructType); ft != nil && format.Kind() == parquetio.VecStruct {
			provider, options = vecField(format, ft, "provider"), vecField(format, ft, "options")
		}
		return func(i int) (ckItem, bool, error) {
			if id.IsNull(i) && schema.IsNull(i) {
				return ckItem{}, false, nil
			}
			md := &Metadata{
				ID:               vstr(id, i),
				Name:             vstr(name, i),
				Description:      vstr(desc, i),
				SchemaString:     vstr(schema, i),
				PartitionColumns: vstrArray(pcols, i),
				Configuration:    d.strMap(conf, i),
				CreatedTime:      d.long(created, i),
			}
			if provider != nil && !format.IsNull(i) {
				md.Format = Format{Provider: vstr(provider, i), Options: d.strMap(options, i)}
			}
			return ckItem{act: &Action{MetaData: md}}, true, nil
		}
	case "protocol":
		minR, minW, rf, wf := get("minReaderVersion"), get("minWriterVersion"), get("readerFeatures"), get("writerFeatures")
		return func(i int) (ckItem, bool, error) {
			if minR.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{Protocol: &Protocol{
				MinReaderVersion: int(minR.Long(i)),
				MinWriterVersion: int(minW.Long(i)),
				ReaderFeatures:   vstrArray(rf, i),
				WriterFeatures:   vstrArray(wf, i),
			}}}, true, nil
		}
	case "txn":
		app, ver, upd := get("appId"), get("version"), get("lastUpdated")
		return func(i int) (ckItem, bool, error) {
			if app.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{Txn: &SetTransaction{AppID: vstr(app, i), Version: ver.Long(i), LastUpdated: d.long(upd, i)}}}, true, nil
		}
	case "domainMetadata":
		dom, conf, removed := get("domain"), get("configuration"), get("removed")
		return func(i int) (ckItem, bool, error) {
			if dom.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{DomainMetadata: &DomainMetadata{Domain: vstr(dom, i), Configuration: vstr(conf, i), Removed: removed.Bool(i)}}}, true, nil
		}
	case "checkpointMetadata":
		ver, tags := get("version"), get("tags")
		return func(i int) (ckItem, bool, error) {
			if ver.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{CheckpointMetadata: &CheckpointMetadata{Version: ver.Long(i), Tags: d.strMap(tags, i)}}}, true, nil
		}
	case "sidecar":
		path, size, mtime, tags := get("path"), get("sizeInBytes"), get("modificationTime"), get("tags")
		return func(i int) (ckItem, bool, error) {
			if path.IsNull(i) {
				return ckItem{}, false, nil
			}
			return ckItem{act: &Action{Sidecar: &Sidecar{Path: vstr(path, i), SizeInBytes: size.Long(i), ModificationTime: mtime.Long(i), Tags: d.strMap(tags, i)}}}, true, nil
		}
	}
	return func(int) (ckItem, bool, error) { return ckItem{}, false, nil }
}
