package table

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// expectedRows is a set of expected rows: column names and, per row, one canonical key per column.
type expectedRows struct {
	columns []string
	rows    [][]string
}

// readExpectedParquet reads every *.parquet file of dir (Spark's or DAT's expected output).
func readExpectedParquet(ctx context.Context, dir string) (*expectedRows, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	store, err := storage.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	exp := &expectedRows{}
	for _, name := range names {
		r, err := store.Open(ctx, filepath.Base(name))
		if err != nil {
			return nil, err
		}
		f, err := parquetio.Open(ctx, r)
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		schema, err := f.Schema()
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cols := columnNames(schema)
		if exp.columns == nil {
			exp.columns = strings.Split(cols, ", ")
		} else if strings.Join(exp.columns, ", ") != cols {
			r.Close()
			return nil, fmt.Errorf("%s: columns %s differ from %v", name, cols, exp.columns)
		}
		rows, err := f.Rows(ctx, schema, parquetio.ReadOptions{})
		if err != nil {
			r.Close()
			return nil, err
		}
		for {
			b, err := rows.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rows.Close()
				r.Close()
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			for _, row := range b.Rows {
				keys := make([]string, len(row))
				for i, v := range row {
					keys[i] = canon(v)
				}
				exp.rows = append(exp.rows, keys)
			}
		}
		rows.Close()
		r.Close()
	}
	if exp.columns == nil {
		return nil, fmt.Errorf("no expected parquet files in %s", dir)
	}
	return exp, nil
}

// readExpectedText reads an arrow pretty-printed table; cells are typed by the table schema (empty
// cell = null), nested values are kept as arrow text.
func readExpectedText(path string, schema *types.StructType) (*expectedRows, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	exp := &expectedRows{}
	var types_ []types.DataType
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(line), "|"), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if exp.columns == nil {
			exp.columns = cells
			for _, c := range cells {
				f := schema.Field(c)
				if f == nil {
					return nil, fmt.Errorf("expected column %q is not in the table schema", c)
				}
				types_ = append(types_, f.Type)
			}
			continue
		}
		if len(cells) != len(exp.columns) {
			return nil, fmt.Errorf("row %q has %d cells, want %d", line, len(cells), len(exp.columns))
		}
		keys := make([]string, len(cells))
		for i, c := range cells {
			if isNested(types_[i]) {
				keys[i] = "a:" + c
				continue
			}
			if c == "" {
				keys[i] = "null"
				continue
			}
			v, err := parseScalar(c, types_[i])
			if err != nil {
				return nil, fmt.Errorf("column %s cell %q: %w", exp.columns[i], c, err)
			}
			keys[i] = canon(v)
		}
		exp.rows = append(exp.rows, keys)
	}
	return exp, nil
}

// readExpectedJSONL reads one JSON object per line; binary columns are given in hex under
// "<name>_hex", decimals as strings or numbers.
func readExpectedJSONL(path string, schema *types.StructType) (*expectedRows, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	exp := &expectedRows{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		// Keep the key order of the first line as the column order.
		keys, obj, err := orderedObject(dec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if exp.columns == nil {
			for _, k := range keys {
				exp.columns = append(exp.columns, strings.TrimSuffix(k, "_hex"))
			}
		}
		row := make([]string, len(exp.columns))
		for i, col := range exp.columns {
			raw, hexed := obj[col], false
			if _, ok := obj[col+"_hex"]; ok {
				raw, hexed = obj[col+"_hex"], true
			}
			fld := schema.Field(col)
			if fld == nil {
				return nil, fmt.Errorf("expected column %q is not in the table schema", col)
			}
			switch x := raw.(type) {
			case nil:
				row[i] = "null"
			case string:
				if hexed {
					b, err := hex.DecodeString(x)
					if err != nil {
						return nil, err
					}
					row[i] = canon(b)
					continue
				}
				v, err := parseScalar(x, fld.Type)
				if err != nil {
					return nil, err
				}
				row[i] = canon(v)
			case json.Number:
				v, err := parseScalar(x.String(), fld.Type)
				if err != nil {
					return nil, err
				}
				row[i] = canon(v)
			case bool:
				row[i] = canon(x)
			default:
				return nil, fmt.Errorf("column %s: unsupported JSON value %v", col, raw)
			}
		}
		exp.rows = append(exp.rows, row)
	}
	return exp, sc.Err()
}

func orderedObject(dec *json.Decoder) ([]string, map[string]any, error) {
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	obj := map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		keys = append(keys, k)
		obj[k] = v
	}
	return keys, obj, nil
}

// parseScalar converts the text of a primitive value to a logical value of type t.
func parseScalar(s string, t types.DataType) (types.Value, error) {
	p := t.(*types.PrimitiveType)
	switch p.Name {
	case types.TypeString:
		return s, nil
	case types.TypeBoolean:
		return strconv.ParseBool(s)
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		return strconv.ParseInt(s, 10, 64)
	case types.TypeFloat:
		f, err := strconv.ParseFloat(s, 32)
		return float32(f), err
	case types.TypeDouble:
		return strconv.ParseFloat(s, 64)
	case types.TypeDecimal:
		r, ok := new(big.Rat).SetString(s)
		if !ok {
			return nil, fmt.Errorf("%q is not a decimal", s)
		}
		// canon renders decimals as exact rationals, so any representation of the value will do.
		num := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil))
		num.Quo(num, r.Denom())
		return types.DecimalValue{Unscaled: num, Scale: 18}, nil
	case types.TypeDate:
		d, err := time.Parse("2006-01-02", s)
		return types.Date(d.Unix() / 86400), err
	case types.TypeTimestamp, types.TypeTimestampNTZ:
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if ts, err := time.Parse(layout, s); err == nil {
				return types.Timestamp(ts.UnixMicro()), nil
			}
		}
		return nil, fmt.Errorf("%q is not a timestamp", s)
	case types.TypeBinary:
		return hex.DecodeString(s)
	}
	return nil, fmt.Errorf("cannot parse %s values", p.Name)
}
