package delta

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Checkpoints as another writer lays them out: parquet-go's own writer, with data page v2, DELTA
// and dictionary encodings, every codec, small pages, several row groups, and the legacy layout of
// lists (an unannotated repeated field, as parquet-go writes a Go slice without the "list" tag).
// Our own writer never produces any of these, so the generated checkpoints do not cover them.
// parquet-go takes DELTA encodings only on non-pointer fields, where "optional" writes the zero
// value as null: those fields are null whenever they would be 0 or "".

type pgDV struct {
	StorageType    *string `parquet:"storageType,optional,dict"`
	PathOrInlineDv string  `parquet:"pathOrInlineDv,optional,delta"`
	Offset         int32   `parquet:"offset,optional,delta"`
	SizeInBytes    *int32  `parquet:"sizeInBytes,optional"`
	Cardinality    int64   `parquet:"cardinality,optional,delta"`
	MaxRowIndex    *int64  `parquet:"maxRowIndex,optional"`
}

type pgAdd struct {
	Path                    string             `parquet:"path,optional,delta"`
	PartitionValues         map[string]*string `parquet:"partitionValues,optional"`
	Size                    int64              `parquet:"size,optional,delta"`
	ModificationTime        int64              `parquet:"modificationTime,optional,delta"`
	DataChange              *bool              `parquet:"dataChange,optional"`
	Stats                   string             `parquet:"stats,optional,delta"`
	Tags                    map[string]*string `parquet:"tags,optional"`
	DeletionVector          *pgDV              `parquet:"deletionVector,optional"`
	BaseRowID               int64              `parquet:"baseRowId,optional,delta"`
	DefaultRowCommitVersion *int64             `parquet:"defaultRowCommitVersion,optional"`
	ClusteringProvider      *string            `parquet:"clusteringProvider,optional,dict"`
}

type pgRemove struct {
	Path              string             `parquet:"path,optional,delta"`
	DeletionTimestamp int64              `parquet:"deletionTimestamp,optional,delta"`
	DataChange        *bool              `parquet:"dataChange,optional"`
	ExtendedMetadata  *bool              `parquet:"extendedFileMetadata,optional"`
	PartitionValues   map[string]*string `parquet:"partitionValues,optional"`
	Size              *int64             `parquet:"size,optional"`
	DeletionVector    *pgDV              `parquet:"deletionVector,optional"`
}

type pgFormat struct {
	Provider *string            `parquet:"provider,optional"`
	Options  map[string]*string `parquet:"options,optional"`
}

type pgMetaData struct {
	ID               *string            `parquet:"id,optional"`
	Name             *string            `parquet:"name,optional"`
	Format           *pgFormat          `parquet:"format,optional"`
	SchemaString     *string            `parquet:"schemaString,optional"`
	PartitionColumns []string           `parquet:"partitionColumns"` // legacy: repeated binary
	Configuration    map[string]*string `parquet:"configuration,optional"`
	CreatedTime      *int64             `parquet:"createdTime,optional"`
}

type pgProtocol struct {
	MinReaderVersion *int32   `parquet:"minReaderVersion,optional"`
	MinWriterVersion *int32   `parquet:"minWriterVersion,optional"`
	ReaderFeatures   []string `parquet:"readerFeatures"` // legacy: repeated binary
	WriterFeatures   []string `parquet:"writerFeatures,list"`
}

type pgTxn struct {
	AppID       *string `parquet:"appId,optional"`
	Version     *int64  `parquet:"version,optional"`
	LastUpdated *int64  `parquet:"lastUpdated,optional"`
}

type pgRow struct {
	Txn      *pgTxn      `parquet:"txn,optional"`
	Add      *pgAdd      `parquet:"add,optional"`
	Remove   *pgRemove   `parquet:"remove,optional"`
	MetaData *pgMetaData `parquet:"metaData,optional"`
	Protocol *pgProtocol `parquet:"protocol,optional"`
}

func pgRows(n int, seed uint64) []pgRow {
	r := rand.New(rand.NewPCG(seed, 7))
	sp := func(p float64, s string) *string {
		if r.Float64() < p {
			return nil
		}
		return &s
	}
	lp := func(p float64, v int64) *int64 {
		if r.Float64() < p {
			return nil
		}
		return &v
	}
	bp := func(p float64) *bool {
		if r.Float64() < p {
			return nil
		}
		b := r.IntN(2) == 0
		return &b
	}
	strMap := func() map[string]*string {
		if r.IntN(4) == 0 {
			return nil
		}
		m := map[string]*string{}
		for i := range r.IntN(3) {
			m[fmt.Sprintf("k%d", i)] = sp(0.2, fmt.Sprintf("v%d", r.IntN(5)))
		}
		return m
	}
	dv := func() *pgDV {
		if r.IntN(3) > 0 {
			return nil
		}
		off, size := int32(r.IntN(100)), int32(r.IntN(1000))
		d := &pgDV{StorageType: sp(0.1, "u"), PathOrInlineDv: fmt.Sprintf("ab^-aqEH.-t@S}K{vb[*k^%d", r.IntN(3)), SizeInBytes: &size,
			Cardinality: int64(r.IntN(50)), MaxRowIndex: lp(0.5, int64(r.IntN(999)))}
		if r.IntN(2) == 0 {
			d.Offset = off
		}
		return d
	}
	// values of the non-pointer fields: the zero value is written as null
	sv := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	lv := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	path := func() string { return sv(sp(0.03, fmt.Sprintf("part=%d/f-%d.parquet", r.IntN(4), r.IntN(n/2+1)))) }
	rows := make([]pgRow, n)
	for i := range rows {
		switch k := r.IntN(20); {
		case k < 12:
			rows[i].Add = &pgAdd{Path: path(), PartitionValues: strMap(), Size: lv(lp(0.05, int64(r.IntN(1<<20)))), ModificationTime: lv(lp(0.05, int64(1700000000000+i))),
				DataChange: bp(0.1), Stats: sv(sp(0.3, fmt.Sprintf(`{"numRecords":%d}`, i))), Tags: strMap(), DeletionVector: dv(),
				BaseRowID: lv(lp(0.5, int64(i*10))), DefaultRowCommitVersion: lp(0.5, 3), ClusteringProvider: sp(0.8, "liquid")}
		case k < 16:
			rows[i].Remove = &pgRemove{Path: path(), DeletionTimestamp: lv(lp(0.2, int64(1700000000000+i))), DataChange: bp(0.1), ExtendedMetadata: bp(0.3),
				PartitionValues: strMap(), Size: lp(0.3, int64(r.IntN(1000))), DeletionVector: dv()}
		case k == 16:
			md := &pgMetaData{ID: sp(0.2, fmt.Sprintf("id-%d", i)), Name: sp(0.5, "name"), SchemaString: sp(0.2, `{"type":"struct","fields":[]}`),
				Configuration: strMap(), CreatedTime: lp(0.5, int64(i))}
			if r.IntN(3) > 0 {
				md.Format = &pgFormat{Provider: sp(0.2, "parquet"), Options: strMap()}
			}
			for j := range r.IntN(3) {
				md.PartitionColumns = append(md.PartitionColumns, fmt.Sprintf("c%d", j))
			}
			rows[i].MetaData = md
		case k == 17:
			minR, minW := int32(r.IntN(4)), int32(r.IntN(8))
			p := &pgProtocol{MinReaderVersion: &minR, MinWriterVersion: &minW}
			for j := range r.IntN(3) {
				p.ReaderFeatures = append(p.ReaderFeatures, fmt.Sprintf("rf%d", j))
				p.WriterFeatures = append(p.WriterFeatures, fmt.Sprintf("wf%d", j))
			}
			rows[i].Protocol = p
		default:
			rows[i].Txn = &pgTxn{AppID: sp(0.2, fmt.Sprintf("app-%d", r.IntN(5))), Version: lp(0.1, int64(i)), LastUpdated: lp(0.5, int64(i*2))}
			if r.IntN(4) == 0 { // a row with two actions: the first column (txn) wins
				rows[i].Add = &pgAdd{Path: path()}
			}
		}
	}
	return rows
}

func TestCheckpointRead_ColumnsDecodeAnotherWritersCheckpointsAsTheOracle(t *testing.T) {
	codecs := []parquet.WriterOption{
		parquet.Compression(&parquet.Snappy), parquet.Compression(&parquet.Zstd), parquet.Compression(&parquet.Gzip),
		parquet.Compression(&parquet.Lz4Raw), parquet.Compression(&parquet.Brotli), parquet.Compression(&parquet.Uncompressed),
	}
	// the layouts this test is for
	layout := parquet.SchemaOf(pgRow{}).String()
	for _, want := range []string{"repeated binary partitionColumns (STRING)", "repeated binary readerFeatures (STRING)", "(MAP)", "(LIST)"} {
		if !strings.Contains(layout, want) {
			t.Fatalf("parquet-go no longer writes %q:\n%s", want, layout)
		}
	}
	for i, codec := range codecs {
		version := 1 + i%2
		t.Run(fmt.Sprintf("codec %d data page v%d", i, version), func(t *testing.T) {
			var buf bytes.Buffer
			w := parquet.NewGenericWriter[pgRow](&buf, parquet.DataPageVersion(version), parquet.PageBufferSize(2048<<(i%3)),
				parquet.MaxRowsPerRowGroup(int64(900+100*i)), codec)
			if _, err := w.Write(pgRows(3000, uint64(i))); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "cp.parquet"), buf.Bytes(), 0o644))
			store, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			f, err := openCheckpointFile(context.Background(), store, "cp.parquet")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.pf.NumRowGroups() < 3 {
				t.Fatalf("%d row groups", f.pf.NumRowGroups())
			}
			for _, req := range allRequests {
				got, want := decodeBothWays(t, f, req)
				if len(want) < 100 {
					t.Fatalf("%v: only %d actions", req, len(want))
				}
				assertSameActions(t, got, want)
			}
			legacyLists := 0
			got, _ := decodeBothWays(t, f, parquetReadRequest{columns: nonFileColumns})
			for _, a := range got {
				if a.MetaData != nil && len(a.MetaData.PartitionColumns) > 0 || a.Protocol != nil && len(a.Protocol.ReaderFeatures) > 0 {
					legacyLists++
				}
			}
			if legacyLists < 20 {
				t.Fatalf("only %d actions with values in legacy lists", legacyLists)
			}
		})
	}
}

func TestCheckpointRead_RefusesALayoutItCannotDecodeNamingFileAndColumn(t *testing.T) {
	// add.size stored as a string and protocol.readerFeatures as a list of lists: neither decoder
	// could read them; production refuses before decoding anything, naming both.
	add := checkpointAddStruct()
	for i, f := range add.Fields {
		if f.Name == "size" {
			add.Fields[i] = field("size", str())
		}
	}
	proto := checkpointColumn("protocol")
	proto.Type.(*types.StructType).Fields[2] = field("readerFeatures", &types.ArrayType{ElementType: strArray(), ContainsNull: true})
	schema := &types.StructType{Fields: []*types.StructField{field("add", add), proto}}
	var buf bytes.Buffer
	w, err := parquetio.NewWriter(&buf, schema, parquetio.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must(t, w.Write([]types.Struct{{types.Struct{"a.parquet", nil, "12", nil, nil, nil, nil, nil, nil, nil, nil}, nil}}))
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "00000000000000000001.checkpoint.parquet"), buf.Bytes(), 0o644))
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		columns []string
		column  string
	}{{fileColumns, "add.size"}, {nonFileColumns, "protocol.readerFeatures"}} {
		err := readParquetActions(context.Background(), store, "00000000000000000001.checkpoint.parquet", parquetReadRequest{columns: tc.columns}, nil,
			func(*Action) error { t.Fatal("an action was decoded from a refused file"); return nil })
		if err == nil || !strings.Contains(err.Error(), "00000000000000000001.checkpoint.parquet") || !strings.Contains(err.Error(), tc.column) {
			t.Fatalf("%v: err = %v, want the file and column %s named", tc.columns, err, tc.column)
		}
	}
}

func TestCheckpointRead_RefusesAnActionWithoutARequiredField(t *testing.T) {
	// Absent columns read as null: without add.path every add would vanish, without
	// add.partitionValues every file would land in the null partition. Both are refused.
	for _, missing := range []string{"path", "partitionValues", "size"} {
		t.Run(missing, func(t *testing.T) {
			add := checkpointAddStruct()
			kept := &types.StructType{}
			row := types.Struct{}
			for _, f := range add.Fields {
				if f.Name == missing {
					continue
				}
				kept.Fields = append(kept.Fields, f)
				switch f.Name {
				case "path":
					row = append(row, "a.parquet")
				case "partitionValues":
					row = append(row, types.Map{{Key: "p", Value: "1"}})
				case "size", "modificationTime":
					row = append(row, int64(1))
				case "dataChange":
					row = append(row, true)
				default:
					row = append(row, nil)
				}
			}
			var buf bytes.Buffer
			w, err := parquetio.NewWriter(&buf, &types.StructType{Fields: []*types.StructField{field("add", kept)}}, parquetio.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			must(t, w.Write([]types.Struct{{row}}))
			if _, err := w.Close(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			must(t, os.WriteFile(filepath.Join(dir, "cp.parquet"), buf.Bytes(), 0o644))
			store, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			err = readParquetActions(context.Background(), store, "cp.parquet", parquetReadRequest{columns: fileColumns}, nil,
				func(*Action) error { t.Fatal("an action was decoded from a refused file"); return nil })
			if err == nil || !strings.Contains(err.Error(), "cp.parquet") || !strings.Contains(err.Error(), "add."+missing+" is missing") {
				t.Fatalf("err = %v, want cp.parquet and add.%s named", err, missing)
			}
		})
	}
}
