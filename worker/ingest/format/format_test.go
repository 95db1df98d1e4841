package format

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestParseOptions_RefusesUnknownKeysAndBadValues(t *testing.T) {
	for _, tc := range []struct {
		format string
		kv     map[string]string
		want   string
	}{
		{"avro", nil, "use parquet, json or csv"},
		{CSV, map[string]string{"headers": "true"}, `"headers" is not a csv option`},
		{JSON, map[string]string{"delimiter": ";"}, "not a json option"},
		{Parquet, map[string]string{"header": "true"}, "not a parquet option"},
		{CSV, map[string]string{"header": "yes"}, `header="yes"`},
		{CSV, map[string]string{"delimiter": "ab"}, "one ASCII character"},
		{CSV, map[string]string{"quote": ","}, "must differ from the quote"},
		{CSV, map[string]string{"timestampFormat": "yyyy-MM-dd Q"}, `letter 'Q' is not supported`},
	} {
		if _, err := ParseOptions(tc.format, tc.kv, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: err = %v, want %q", tc.format, tc.kv, err, tc.want)
		}
	}
	o, err := ParseOptions("CSV", map[string]string{"Header": "TRUE", "SEP": `\t`, "nullValue": "NA"}, "")
	if err != nil || !o.Header || o.Delimiter != '\t' || o.NullValue != "NA" || o.Evolution != FailOnNewColumns {
		t.Fatalf("options %+v, %v", o, err)
	}
}

func TestJavaLayout_SparkPatternsBecomeGoLayouts(t *testing.T) {
	for in, want := range map[string]string{
		"yyyy-MM-dd":                   "2006-01-02",
		"dd/MM/yyyy HH:mm:ss":          "02/01/2006 15:04:05",
		"yyyy-MM-dd'T'HH:mm:ss.SSSXXX": "2006-01-02T15:04:05.000Z07:00",
		"yyyyMMdd":                     "20060102",
		"d MMM yy h:mm a":              "2 Jan 06 3:04 PM",
	} {
		if got, err := javaLayout(in); err != nil || got != want {
			t.Errorf("javaLayout(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestCSVTokenizer_QuotesEscapesAndLineBreaks(t *testing.T) {
	o, _ := ParseOptions(CSV, nil, "")
	tok := newTokenizer(strings.NewReader("a,\"b,c\",\"d \"\"e\"\"\",\"f \\\"g\\\"\"\n\n\"multi\nline\",,x,\r\n"), &o)
	var records [][]string
	for {
		if _, err := tok.next(); err != nil {
			break
		}
		var rec []string
		for i := range tok.fields() {
			rec = append(rec, tok.field(i))
		}
		records = append(records, rec)
	}
	want := [][]string{{"a", "b,c", `d "e"`, `f "g"`}, {"multi\nline", "", "x", ""}}
	if len(records) != 2 || !slices.Equal(records[0], want[0]) || !slices.Equal(records[1], want[1]) {
		t.Fatalf("records %q, want %q", records, want)
	}
}

func TestParseText_ConversionsAreExactOrRefused(t *testing.T) {
	o, _ := ParseOptions(CSV, nil, "")
	for _, tc := range []struct {
		s    string
		t    *types.PrimitiveType
		want string // "" means an error
	}{
		{"127", types.Primitive(types.TypeByte), "127"},
		{"128", types.Primitive(types.TypeByte), ""},
		{" 42 ", types.Primitive(types.TypeLong), "42"},
		{"4.2", types.Primitive(types.TypeLong), ""},
		{"1e3", types.Primitive(types.TypeDouble), "1000"},
		{"NaN", types.Primitive(types.TypeDouble), "NaN"},
		{"3.4e39", types.Primitive(types.TypeFloat), ""},
		{"12.50", types.Decimal(5, 2), "12.50"},
		{"1234.5", types.Decimal(5, 2), ""},
		{"0.125", types.Decimal(5, 2), ""},
		{"TRUE", types.Primitive(types.TypeBoolean), "true"},
		{"1969-12-31", types.Primitive(types.TypeDate), "1969-12-31"},
		{"2024-02-30", types.Primitive(types.TypeDate), ""},
		{"2024-01-01T10:00:00+02:00", types.Primitive(types.TypeTimestamp), "2024-01-01T08:00:00.000000Z"},
		{"2024-01-01 10:00:00.5", types.Primitive(types.TypeTimestampNTZ), "2024-01-01T10:00:00.500000"},
	} {
		v, err := o.parseText(tc.s, tc.t)
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%q as %s = %v, want an error", tc.s, tc.t, v)
		case tc.want != "" && err != nil:
			t.Errorf("%q as %s: %v", tc.s, tc.t, err)
		case tc.want != "":
			if got := strings.TrimSpace(render(v)); got != tc.want {
				t.Errorf("%q as %s = %s, want %s", tc.s, tc.t, got, tc.want)
			}
		}
	}
}

func render(v types.Value) string {
	if s, ok := v.(interface{ String() string }); ok {
		return s.String()
	}
	return fmt.Sprint(v)
}
