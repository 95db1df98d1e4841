package delta

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// checkpointBatchSize bounds how many checkpoint rows are decoded at once: the rows are converted
// into actions and dropped batch by batch, so a million-file checkpoint never sits in memory as
// Parquet values.
const checkpointBatchSize = 4096

// parquetReadRequest says which top-level checkpoint columns to read.
type parquetReadRequest struct {
	columns []string
	// statsParsed also reads add.stats_parsed (typed by the file's own schema) and turns it into
	// stats JSON for adds whose stats column is null.
	statsParsed bool
	// sizeHint, when set, learns the file's row count before any row is read.
	sizeHint func(rows int64)
}

// readParquetActions streams the actions of one checkpoint or sidecar Parquet file.
func readParquetActions(ctx context.Context, store storage.Store, key string, req parquetReadRequest, in *interner, fn func(*Action) error) error {
	r, err := store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("open checkpoint %s: %w", key, err)
	}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", key, err)
	}
	// The file's own schema tells which columns exist and the type of stats_parsed, whose shape
	// follows the table schema at checkpoint time. If it cannot be derived, read the standard
	// columns by name (absent ones read as null) and do without stats_parsed.
	fileSchema, _ := pf.Schema()
	if req.sizeHint != nil {
		req.sizeHint(pf.NumRows())
	}
	read := &types.StructType{}
	for _, name := range req.columns {
		if fileSchema != nil && fileSchema.Field(name) == nil {
			continue
		}
		col := widen(checkpointColumn(name).Type).(*types.StructType)
		if name == "add" && req.statsParsed && fileSchema != nil {
			if add, ok := fileSchema.Field("add").Type.(*types.StructType); ok {
				if sp := add.Field("stats_parsed"); sp != nil {
					col.Fields = append(col.Fields, &types.StructField{Name: "stats_parsed", Type: sp.Type, Nullable: true})
				}
			}
		}
		read.Fields = append(read.Fields, field(name, col))
	}
	if len(read.Fields) == 0 {
		return nil
	}
	rows, err := pf.Rows(ctx, read, parquetio.ReadOptions{BatchSize: checkpointBatchSize})
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", key, err)
	}
	defer rows.Close()
	conv := newRowConverter(read, in)
	for {
		batch, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", key, err)
		}
		for _, row := range batch.Rows {
			a, err := conv.action(row)
			if err != nil {
				return fmt.Errorf("checkpoint %s: %w", key, err)
			}
			if a == nil {
				continue
			}
			if err := fn(a); err != nil {
				return err
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
	if n, ok := asInt64(w.get(name)); ok {
		return &n
	}
	return nil
}

func (w view) int64v(name string) int64 {
	n, _ := asInt64(w.get(name))
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

func asInt64(v types.Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int16:
		return int64(x), true
	case int8:
		return int64(x), true
	}
	return 0, false
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
	slices.SortFunc(pv, func(a, b PartitionValue) int {
		switch {
		case a.Column < b.Column:
			return -1
		case a.Column > b.Column:
			return 1
		}
		return 0
	})
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
