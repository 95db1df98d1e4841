package parquetio

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// foreignRecord exercises encodings, codecs and page versions that the conformance corpus (almost all
// snappy, PLAIN/dictionary, data page v1) lacks, written by parquet-go's own writer.
type foreignRecord struct {
	ID    int64     `parquet:"id,delta,zstd"`
	Name  string    `parquet:"name,delta,gzip"`
	Code  string    `parquet:"code,dict,lz4"`
	F     float64   `parquet:"f,split,brotli"`
	B     bool      `parquet:"b,uncompressed"`
	Opt   *int32    `parquet:"opt,optional,snappy"`
	List  []string  `parquet:"list,list"`
	When  time.Time `parquet:"when,timestamp(millisecond)"`
	Small int8      `parquet:"small"`
}

func TestRows_ReadsEveryEncodingCodecAndPageVersionOfAnotherWriter(t *testing.T) {
	for _, version := range []int{1, 2} {
		t.Run(fmt.Sprintf("data page v%d", version), func(t *testing.T) {
			var recs []foreignRecord
			var want []types.Struct
			for i := range 5000 {
				r := foreignRecord{
					ID:    int64(i * 7),
					Name:  fmt.Sprintf("name-%d", i%1234),
					Code:  fmt.Sprintf("c%d", i%5),
					F:     float64(i) / 3,
					B:     i%3 == 0,
					When:  time.UnixMilli(int64(i) * 1001).UTC(),
					Small: int8(i),
				}
				var opt, list types.Value
				if i%4 != 0 {
					v := int32(-i)
					r.Opt, opt = &v, int32(-i)
				}
				arr := types.Array{}
				for j := range i % 3 {
					s := fmt.Sprint(j)
					r.List = append(r.List, s)
					arr = append(arr, s)
				}
				list = arr
				recs = append(recs, r)
				want = append(want, types.Struct{r.ID, r.Name, r.Code, r.F, r.B, opt, list, types.Timestamp(int64(i) * 1001 * 1000), int8(i)})
			}
			var buf bytes.Buffer
			w := parquet.NewGenericWriter[foreignRecord](&buf, parquet.DataPageVersion(version), parquet.PageBufferSize(4096))
			if _, err := w.Write(recs); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			f := openBytes(t, buf.Bytes())
			schema := structOf(
				field("id", prim(types.TypeLong), false), field("name", prim(types.TypeString), false),
				field("code", prim(types.TypeString), false), field("f", prim(types.TypeDouble), false),
				field("b", prim(types.TypeBoolean), false), field("opt", prim(types.TypeInteger), true),
				field("list", &types.ArrayType{ElementType: prim(types.TypeString)}, true),
				field("when", prim(types.TypeTimestamp), false), field("small", prim(types.TypeByte), false),
			)
			assertRowsEqual(t, want, readAll(t, f, schema, ReadOptions{}))
		})
	}
}
