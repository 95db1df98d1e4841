package cli

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestAppendJSON_MatchesTheDocumentedEncoding checks the fast encoder against the reference mapping
// (jsonValue through encoding/json) on every type, nested ones and edge values included.
func TestAppendJSON_MatchesTheDocumentedEncoding(t *testing.T) {
	schema := tabletest.AllTypesSchema()
	rows := tabletest.AllTypesRows(60)
	rows[1][11] = "bad \xff utf8 \x01 \u2028 <html>&"
	rows[2][7] = math.NaN()
	rows[3][6] = float32(math.Inf(-1))
	for i, r := range rows {
		want, err := json.Marshal(jsonValue(r, schema))
		if err != nil {
			t.Fatal(err)
		}
		got := appendJSON(nil, r, schema)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("row %d: invalid JSON %s: %v", i, got, err)
		}
		if err := json.Unmarshal(want, &b); err != nil {
			t.Fatalf("row %d: the expected JSON %s is invalid: %v", i, want, err)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want)
		}
	}
	m := &types.MapType{KeyType: types.Primitive(types.TypeLong), ValueType: types.Primitive(types.TypeString)}
	if got := string(appendJSON(nil, types.Map{{Key: int64(1), Value: "a"}}, m)); got != `[{"key":1,"value":"a"}]` {
		t.Errorf("non-string map keys: %s", got)
	}
}
