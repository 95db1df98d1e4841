package ingest

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func zst(s string) string {
	var b bytes.Buffer
	w, _ := zstd.NewWriter(&b)
	_, _ = w.Write([]byte(s)) // into a bytes.Buffer: cannot fail
	w.Close()
	return b.String()
}

var allTypesColumns = []string{"id", "b", "i8", "i16", "i32", "i64", "f32", "f64", "dec_small", "dec_mid", "dec_big", "s", "bin",
	"d", "ts", "ts_ntz", "st", "arr", "arr_st", "m", "part", "pday"}

const allTypesJSON = `{"id":1,"b":true,"i8":-128,"i16":32767,"i32":-2147483648,"i64":9223372036854775807,"f32":1.5,"f64":-2.25e-300,` +
	`"dec_small":"1234567.89","dec_mid":-123456789012.345678,"dec_big":"1234567890123456789012345678.0123456789","s":"héllo, wörld","bin":"AAEC/w==",` +
	`"d":"2024-02-29","ts":"2024-02-29T23:59:59.123456+02:00","ts_ntz":"2024-02-29 23:59:59.000001",` +
	`"st":{"x":7,"Y":"why","inner":{"z":1.5}},"arr":[1,null,3],"arr_st":[{"k":"a","v":0.5},null],"m":{"b":2,"a":null},"part":"a/b=c","pday":"2024-01-01"}
{"id":2}
{"id":3,"st":{"x":null},"arr":[],"m":{},"f64":"NaN","f32":"-Infinity","part":"p"}
`

func TestRun_JSONIntoEveryDeltaType(t *testing.T) {
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingNone, delta.ColumnMappingName} {
		t.Run(string(mode), func(t *testing.T) {
			fx := newFixture(t)
			if _, _, err := tabletest.Create(context.Background(), fx.tbl.Store(), tabletest.AllTypesSchema(), []string{"part"}, mode, nil); err != nil {
				t.Fatal(err)
			}
			fx.put("a.json", allTypesJSON[:strings.Index(allTypesJSON, "\n")+1])
			fx.put("b.json.zst", zst(allTypesJSON[strings.Index(allTypesJSON, "\n")+1:]))
			o := fx.options(format.JSON, nil, "")
			o.AvailableNow = true
			fx.run(o)
			got := fx.rows(allTypesColumns...)
			want := []string{
				"id=1 b=true i8=-128 i16=32767 i32=-2147483648 i64=9223372036854775807 f32=1.5 f64=-2.25e-300 dec_small=1234567.89 " +
					"dec_mid=-123456789012.345678 dec_big=1234567890123456789012345678.0123456789 s=héllo, wörld bin=000102ff d=2024-02-29 " +
					"ts=2024-02-29T21:59:59.123456Z ts_ntz=2024-02-29T23:59:59.000001 st={7,why,{1.500}} arr=[1,null,3] arr_st=[{a,0.5},null] " +
					"m=map[b:2,a:null] part=a/b=c pday=2024-01-01",
				"id=2 b=null i8=null i16=null i32=null i64=null f32=null f64=null dec_small=null dec_mid=null dec_big=null s=null bin=null d=null " +
					"ts=null ts_ntz=null st=null arr=null arr_st=null m=null part=null pday=null",
				"id=3 b=null i8=null i16=null i32=null i64=null f32=-Inf f64=NaN dec_small=null dec_mid=null dec_big=null s=null bin=null d=null " +
					"ts=null ts_ntz=null st={null,null,null} arr=[] arr_st=null m=map[] part=p pday=null",
			}
			if !slices.Equal(got, want) {
				t.Fatalf("rows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestRun_CSVQuotingAndHeaderEdgeCases(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		longCol("id"),
		{Name: "Name", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
		{Name: "d", Type: types.Primitive(types.TypeDate), Nullable: true},
		{Name: "ok", Type: types.Primitive(types.TypeBoolean), Nullable: true},
	}}
	for _, tc := range []struct {
		name string
		opts map[string]string
		data string
		want []string
	}{
		{"rfc4180 quoting, crlf, header in another case and order", map[string]string{"header": "true"},
			"OK,name,ID,d,ts\r\ntrue,\"a, b\",1,2024-01-02,2024-01-02T03:04:05Z\r\nfalse,\"say \"\"hi\"\"\",2,,\r\n,\"two\nlines\",3,2024-12-31,\r\n",
			[]string{`id=1 Name=a, b ts=2024-01-02T03:04:05.000000Z d=2024-01-02 ok=true`, `id=2 Name=say "hi" ts=null d=null ok=false`,
				"id=3 Name=two\nlines ts=null d=2024-12-31 ok=null"}},
		{"quoted empty is an empty string, unquoted empty is null", map[string]string{"header": "true"},
			"id,name\n1,\"\"\n2,\n", []string{"id=1 Name= ts=null d=null ok=null", "id=2 Name=null ts=null d=null ok=null"}},
		{"backslash escape (Spark's default), semicolons, comments, blank lines", map[string]string{"header": "true", "sep": ";", "comment": "#"},
			"# exported\nid;name\n\n1;\"a \\\"q\\\" b\"\n2;x;\n", nil},
		{"single quotes, nullValue, patterns", map[string]string{"header": "true", "quote": "'", "nullValue": "NA",
			"timestampFormat": "dd/MM/yyyy HH:mm", "dateFormat": "yyyyMMdd"},
			"id,name,ts,d\n1,'it''s, ok',31/12/2024 23:59,20240229\n2,NA,NA,NA\n3,'NA',,\n",
			[]string{"id=1 Name=it's, ok ts=2024-12-31T23:59:00.000000Z d=2024-02-29 ok=null", "id=2 Name=null ts=null d=null ok=null",
				"id=3 Name=NA ts=null d=null ok=null"}},
		{"no header: columns by position", nil, "1,x,2024-01-01T00:00:00Z,2024-01-01,true\n",
			[]string{"id=1 Name=x ts=2024-01-01T00:00:00.000000Z d=2024-01-01 ok=true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: schema}); err != nil {
				t.Fatal(err)
			}
			fx.put("a.csv", tc.data)
			o := fx.options(format.CSV, tc.opts, "")
			o.AvailableNow = true
			if tc.want == nil {
				// The trailing delimiter makes row 2 three fields: the error names it.
				_, err := Run(context.Background(), fx.tbl, o)
				if err == nil || !strings.Contains(err.Error(), "row 2 (line 5)") {
					t.Fatalf("err = %v, want row 2 (line 5) named", err)
				}
				fx.put("a.csv", "# exported\nid;name\n\n1;\"a \\\"q\\\" b\"\n2;x\n")
				o.OnBadFile, o.AllowOverwrites = BadFileSkip, true
				fx.run(o)
				tc.want = []string{`id=1 Name=a "q" b ts=null d=null ok=null`, "id=2 Name=x ts=null d=null ok=null"}
			} else {
				fx.run(o)
			}
			if got := fx.rows("id", "Name", "ts", "d", "ok"); !slices.Equal(got, tc.want) {
				t.Fatalf("rows\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestRun_NestedAndMultiLineJSONInferredForANewTable(t *testing.T) {
	fx := newFixture(t)
	fx.put("a.json", `[
  {"id": 1, "user": {"name": "ann", "tags": ["x", "y"]}, "at": "2024-01-01T00:00:00Z", "n": 1},
  {"id": 2, "user": {"name": "bob", "tags": []}, "n": 2.5, "flag": true}
]`)
	o := fx.options(format.JSON, map[string]string{"multiLine": "true"}, "")
	o.AvailableNow = true
	fx.run(o)
	got := fx.snapshot().Schema().String()
	want := "struct<id:long,user:struct<name:string,tags:array<string>>,at:string,n:double,flag:boolean>"
	if got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	rows := fx.rows("id", "user", "n", "flag")
	if !slices.Equal(rows, []string{"id=1 user={ann,[x,y]} n=1 flag=null", "id=2 user={bob,[]} n=2.5 flag=true"}) {
		t.Fatalf("rows %q", rows)
	}
}
