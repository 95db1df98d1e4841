package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The test oracle for the checkpoint decoder: every row a types.Struct through parquetio's logical
// reader (File.Rows), converted into actions by rowConverter, written as plainly as possible from
// the protocol's description of each action. Production decodes checkpoints with ckDecoder
// (checkpoint_read_columns.go) only; the differential tests compare the two on every conformance
// checkpoint and on generated files. A new checkpoint action field is added to checkpointColumn
// and ckDecoder, and here so that the tests compare it.

// oracleSchema is the oracle's read schema for a request: the columnar decoder's, with
// add.stats_parsed as a field of add when it is read in step.
func oracleSchema(s ckReadSchemas) *types.StructType {
	out := &types.StructType{}
	for _, f := range s.columns.Fields {
		if f.Name == "add" && s.statsParsed != nil {
			add := f.Type.(*types.StructType)
			f = field("add", &types.StructType{Fields: append(slices.Clip(add.Fields), &types.StructField{Name: "stats_parsed", Type: s.statsParsed, Nullable: true})})
		}
		out.Fields = append(out.Fields, f)
	}
	return out
}

// oracleRead decodes a whole checkpoint file with the oracle, in batches of batchSize rows.
func oracleRead(ctx context.Context, f *ckFile, req parquetReadRequest, in *interner, batchSize int, fn func(*Action) error) error {
	schema := oracleSchema(f.readSchemas(req))
	if len(schema.Fields) == 0 {
		return nil
	}
	rows, err := f.pf.Rows(ctx, schema, parquetio.ReadOptions{BatchSize: batchSize})
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", f.key, err)
	}
	defer rows.Close()
	conv := newRowConverter(schema, in)
	for {
		batch, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", f.key, err)
		}
		for _, row := range batch.Rows {
			a, err := conv.action(row)
			if err != nil {
				return err
			}
			if a != nil {
				if err := fn(a); err != nil {
					return err
				}
			}
		}
	}
}

// rowConverter turns checkpoint rows (one non-null top-level struct each) into actions.
type rowConverter struct {
	schema *types.StructType
	in     *interner
}

func newRowConverter(schema *types.StructType, in *interner) *rowConverter {
	return &rowConverter{schema: schema, in: in}
}

// view reads fields of a struct value by name.
type view struct {
	t *types.StructType
	v types.Struct
}

func (w view) get(name string) types.Value {
	i := w.t.FieldIndex(name)
	if i < 0 || i >= len(w.v) {
		return nil
	}
	return w.v[i]
}

func (w view) sub(name string) (view, bool) {
	i := w.t.FieldIndex(name)
	if i < 0 || i >= len(w.v) || w.v[i] == nil {
		return view{}, false
	}
	st, ok1 := w.t.Fields[i].Type.(*types.StructType)
	sv, ok2 := w.v[i].(types.Struct)
	return view{st, sv}, ok1 && ok2
}

func (w view) str(name string) string {
	s, _ := w.get(name).(string)
	return s
}

func (w view) int64p(name string) *int64 {
	if n, ok := types.AsInt64(w.get(name)); ok {
		return &n
	}
	return nil
}

func (w view) int64v(name string) int64 {
	n, _ := types.AsInt64(w.get(name))
	return n
}

func (w view) boolv(name string) bool {
	b, _ := w.get(name).(bool)
	return b
}

func (w view) strMap(name string) map[string]string {
	m, ok := w.get(name).(types.Map)
	if !ok {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, e := range m {
		k, _ := e.Key.(string)
		v, _ := e.Value.(string)
		out[k] = v
	}
	return out
}

func (w view) strArray(name string) []string {
	a, ok := w.get(name).(types.Array)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(a))
	for _, e := range a {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (c *rowConverter) partitionValues(w view, name string) PartitionValues {
	m, ok := w.get(name).(types.Map)
	if !ok {
		return nil
	}
	pv := make(PartitionValues, 0, len(m))
	for _, e := range m {
		k, _ := e.Key.(string)
		e2 := PartitionValue{Column: c.in.str(k)}
		if s, ok := e.Value.(string); ok {
			e2.Value = c.in.str(s)
		} else {
			e2.Null = true
		}
		pv = append(pv, e2)
	}
	pv.sortByColumn()
	return pv
}

func dvFromView(w view, name string) *DeletionVectorDescriptor {
	d, ok := w.sub(name)
	if !ok || d.str("storageType") == "" {
		return nil
	}
	dv := &DeletionVectorDescriptor{
		StorageType:    d.str("storageType"),
		PathOrInlineDv: d.str("pathOrInlineDv"),
		SizeInBytes:    int32(d.int64v("sizeInBytes")),
		Cardinality:    d.int64v("cardinality"),
		MaxRowIndex:    d.int64p("maxRowIndex"),
	}
	if off := d.int64p("offset"); off != nil {
		dv.Offset = ptr(int32(*off))
	}
	return dv
}

func (c *rowConverter) action(row types.Struct) (*Action, error) {
	top := view{c.schema, row}
	for i, f := range c.schema.Fields {
		if i >= len(row) || row[i] == nil {
			continue
		}
		w, ok := top.sub(f.Name)
		if !ok {
			continue
		}
		switch f.Name {
		case "add":
			if w.get("path") == nil {
				continue
			}
			a := &AddFile{
				Path:                    w.str("path"),
				PartitionValues:         c.partitionValues(w, "partitionValues"),
				Size:                    w.int64v("size"),
				ModificationTime:        w.int64v("modificationTime"),
				DataChange:              w.boolv("dataChange"),
				Stats:                   w.str("stats"),
				Tags:                    w.strMap("tags"),
				DeletionVector:          dvFromView(w, "deletionVector"),
				BaseRowID:               w.int64p("baseRowId"),
				DefaultRowCommitVersion: w.int64p("defaultRowCommitVersion"),
				ClusteringProvider:      w.str("clusteringProvider"),
			}
			if a.Stats == "" {
				if i := w.t.FieldIndex("stats_parsed"); i >= 0 && w.v[i] != nil {
					js, err := appendValueJSON(nil, w.t.Fields[i].Type, w.v[i])
					if err != nil {
						return nil, fmt.Errorf("add %s: stats_parsed: %w", a.Path, err)
					}
					a.Stats = string(js)
				}
			}
			return &Action{Add: a}, nil
		case "remove":
			if w.get("path") == nil {
				continue
			}
			return &Action{Remove: &RemoveFile{
				Path:                    w.str("path"),
				DeletionTimestamp:       w.int64p("deletionTimestamp"),
				DataChange:              w.boolv("dataChange"),
				ExtendedFileMetadata:    boolp(w.get("extendedFileMetadata")),
				PartitionValues:         c.partitionValues(w, "partitionValues"),
				Size:                    w.int64p("size"),
				DeletionVector:          dvFromView(w, "deletionVector"),
				BaseRowID:               w.int64p("baseRowId"),
				DefaultRowCommitVersion: w.int64p("defaultRowCommitVersion"),
			}}, nil
		case "metaData":
			if w.get("id") == nil && w.get("schemaString") == nil {
				continue
			}
			md := &Metadata{
				ID:               w.str("id"),
				Name:             w.str("name"),
				Description:      w.str("description"),
				SchemaString:     w.str("schemaString"),
				PartitionColumns: w.strArray("partitionColumns"),
				Configuration:    w.strMap("configuration"),
				CreatedTime:      w.int64p("createdTime"),
			}
			if fm, ok := w.sub("format"); ok {
				md.Format = Format{Provider: fm.str("provider"), Options: fm.strMap("options")}
			}
			return &Action{MetaData: md}, nil
		case "protocol":
			if w.get("minReaderVersion") == nil {
				continue
			}
			return &Action{Protocol: &Protocol{
				MinReaderVersion: int(w.int64v("minReaderVersion")),
				MinWriterVersion: int(w.int64v("minWriterVersion")),
				ReaderFeatures:   w.strArray("readerFeatures"),
				WriterFeatures:   w.strArray("writerFeatures"),
			}}, nil
		case "txn":
			if w.get("appId") == nil {
				continue
			}
			return &Action{Txn: &SetTransaction{AppID: w.str("appId"), Version: w.int64v("version"), LastUpdated: w.int64p("lastUpdated")}}, nil
		case "domainMetadata":
			if w.get("domain") == nil {
				continue
			}
			return &Action{DomainMetadata: &DomainMetadata{Domain: w.str("domain"), Configuration: w.str("configuration"), Removed: w.boolv("removed")}}, nil
		case "checkpointMetadata":
			if w.get("version") == nil {
				continue
			}
			return &Action{CheckpointMetadata: &CheckpointMetadata{Version: w.int64v("version"), Tags: w.strMap("tags")}}, nil
		case "sidecar":
			if w.get("path") == nil {
				continue
			}
			return &Action{Sidecar: &Sidecar{Path: w.str("path"), SizeInBytes: w.int64v("sizeInBytes"), ModificationTime: w.int64v("modificationTime"), Tags: w.strMap("tags")}}, nil
		}
	}
	return nil, nil
}

func boolp(v types.Value) *bool {
	if b, ok := v.(bool); ok {
		return &b
	}
	return nil
}
