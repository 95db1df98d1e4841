package format

import (
	"errors"
	"math"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ColumnReader is a Reader that can also hand over its rows as column vectors
// (parquetio.FlatBatch), which the table writer encodes without boxing every value: the columnar
// path. Columnar says whether it can for this file; when it cannot, use Next.
type ColumnReader interface {
	Reader
	// Columnar reports whether NextColumns serves this file: a flat table schema (no struct, array,
	// map, decimal or variant column) and no rescued-data column (rescue mode reads rows). JSON files
	// must be newline-delimited.
	Columnar() bool
	// NextColumns returns the next rows (at most ChunkRows) as one vector per table column, or
	// io.EOF after the last. It fails as Next does, with the same errors.
	NextColumns() (*parquetio.FlatBatch, error)
}

// columnar is the state shared by the CSV and JSON columnar readers: the vectors being filled and,
// per row, which table columns got a value.
type columnar struct {
	p     *projector
	kinds []parquetio.FlatKind
	prims []*types.PrimitiveType
	set   []bool
	b     *parquetio.FlatBatch
}

// newColumnar returns nil when the projector's schema cannot be read as vectors.
func newColumnar(p *projector) *columnar {
	if p.rescue >= 0 || p.o.Evolution == Rescue || !parquetio.FlatSchema(p.schema) {
		return nil
	}
	c := &columnar{p: p, set: make([]bool, len(p.schema.Fields))}
	for _, f := range p.schema.Fields {
		k, _ := parquetio.FlatKindOf(f.Type)
		c.kinds = append(c.kinds, k)
		c.prims = append(c.prims, f.Type.(*types.PrimitiveType))
	}
	return c
}

// begin starts a new batch (the previous one now belongs to the writer). Text columns get the
// previous batch's byte size as capacity, so their values are not copied again as they grow.
func (c *columnar) begin() {
	prev := c.b
	c.b = parquetio.NewFlatBatch(c.p.schema, ChunkRows)
	if prev != nil {
		for i := range c.b.Cols {
			if n := len(prev.Cols[i].Bin); n > 0 {
				c.b.Cols[i].Bin = make([]byte, 0, n+n/8)
			}
		}
	}
}

// endRow appends nulls to the columns the row did not set, after checking NOT NULL columns as
// projector.finish does for rows.
func (c *columnar) endRow(rc *row) error {
	for i, ok := range c.set {
		if ok {
			c.set[i] = false
			continue
		}
		if !c.p.schema.Fields[i].Nullable {
			c.resetRow()
			return c.p.fail(rc, c.p.schema.Fields[i].Name, errors.New("the column is NOT NULL but the row has no value for it"))
		}
		c.b.Cols[i].AppendNull(c.kinds[i])
	}
	c.b.Rows++
	return nil
}

func (c *columnar) resetRow() {
	for i := range c.set {
		c.set[i] = false
	}
}

// appendRow adds a row converted by the row path (a line the fast scanner leaves to it).
func (c *columnar) appendRow(out types.Struct) error {
	for i, v := range out {
		if err := c.b.Cols[i].AppendValue(c.prims[i], v); err != nil {
			return err
		}
	}
	c.b.Rows++
	return nil
}

// unsafeString views b as a string for parsing without a copy; the string must not outlive b.
func unsafeString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// appendText converts the text of a field into column i, as parseText would: the common forms
// are parsed here without allocating, anything else by parseText itself, so both paths accept the
// same text and give the same values and errors.
func (c *columnar) appendText(i int, s []byte) error {
	v := &c.b.Cols[i]
	t := c.prims[i]
	c.set[i] = true
	switch t.Name {
	case types.TypeString:
		if utf8.Valid(s) {
			v.AppendBytes(s)
			return nil
		}
	case types.TypeBinary:
		v.AppendBytes(s)
		return nil
	case types.TypeLong, types.TypeInteger, types.TypeShort, types.TypeByte:
		if n, ok := parseDecimalInt(s); ok {
			switch t.Name {
			case types.TypeLong:
				v.I64 = append(v.I64, n)
				v.Null = append(v.Null, false)
				return nil
			case types.TypeInteger:
				if n >= math.MinInt32 && n <= math.MaxInt32 {
					v.I32 = append(v.I32, int32(n))
					v.Null = append(v.Null, false)
					return nil
				}
			case types.TypeShort:
				if n >= math.MinInt16 && n <= math.MaxInt16 {
					v.I32 = append(v.I32, int32(n))
					v.Null = append(v.Null, false)
					return nil
				}
			case types.TypeByte:
				if n >= math.MinInt8 && n <= math.MaxInt8 {
					v.I32 = append(v.I32, int32(n))
					v.Null = append(v.Null, false)
					return nil
				}
			}
		}
	case types.TypeDouble:
		if f, err := parseFloat(strings.TrimSpace(unsafeString(s))); err == nil {
			v.F64 = append(v.F64, f)
			v.Null = append(v.Null, false)
			return nil
		}
	case types.TypeBoolean:
		switch unsafeString(s) {
		case "true":
			v.Bool = append(v.Bool, true)
			v.Null = append(v.Null, false)
			return nil
		case "false":
			v.Bool = append(v.Bool, false)
			v.Null = append(v.Null, false)
			return nil
		}
	case types.TypeDate:
		if c.p.o.DateFormat == "" {
			if d, ok := parseISODate(s); ok {
				v.I32 = append(v.I32, int32(d))
				v.Null = append(v.Null, false)
				return nil
			}
		}
	case types.TypeTimestamp, types.TypeTimestampNTZ:
		if c.p.o.TimestampFormat == "" {
			if wall, off, ok := parseISOTimestamp(s); ok {
				us := wall - off*1_000_000
				if t.Name == types.TypeTimestampNTZ {
					us = wall
				}
				v.I64 = append(v.I64, us)
				v.Null = append(v.Null, false)
				return nil
			}
		}
	}
	val, err := c.p.o.parseText(string(s), t)
	if err != nil {
		c.set[i] = false
		return err
	}
	return v.AppendValue(t, val)
}

// parseDecimalInt parses [+-]digits (at most 18 digits, so it cannot overflow); other text (spaces,
// longer numbers) is left to strconv through parseText.
func parseDecimalInt(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 {
		return 0, false
	}
	var n int64
	for _, ch := range s {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		n = n*10 + int64(ch-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

func digits(s []byte, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for _, ch := range s[:n] {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		v = v*10 + int(ch-'0')
	}
	return v, true
}

// parseISODate parses yyyy-MM-dd (a real calendar day) into days since the epoch.
func parseISODate(s []byte) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	y, ok1 := digits(s, 4)
	m, ok2 := digits(s[5:], 2)
	d, ok3 := digits(s[8:], 2)
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, false
	}
	return daysFromCivil(y, m, d), true
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the proleptic Gregorian day number (days since 1970-01-01) of y-m-d.
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// parseISOTimestamp parses yyyy-MM-dd[T ]HH:mm:ss[.fraction][Z|±HH:mm] (the forms the default
// ISO layouts accept and writers produce) into wall-clock microseconds and the zone offset in
// seconds. Other forms (no seconds, a bare date, other zone spellings) are left to time.Parse.
func parseISOTimestamp(s []byte) (wall, off int64, ok bool) {
	if len(s) < 19 || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':' {
		return 0, 0, false
	}
	day, ok := parseISODate(s[:10])
	if !ok {
		return 0, 0, false
	}
	h, ok1 := digits(s[11:], 2)
	mi, ok2 := digits(s[14:], 2)
	sec, ok3 := digits(s[17:], 2)
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || sec > 59 {
		return 0, 0, false
	}
	rest := s[19:]
	var frac int64
	if len(rest) > 0 && rest[0] == '.' {
		n := 1
		scale := int64(100_000)
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			if n <= 6 {
				frac += int64(rest[n]-'0') * scale
				scale /= 10
			}
			n++
		}
		if n == 1 || n > 10 { // no digits, or more than nanoseconds
			return 0, 0, false
		}
		rest = rest[n:]
	}
	switch {
	case len(rest) == 0:
	case len(rest) == 1 && rest[0] == 'Z':
	case len(rest) == 6 && (rest[0] == '+' || rest[0] == '-') && rest[3] == ':':
		oh, ok1 := digits(rest[1:], 2)
		om, ok2 := digits(rest[4:], 2)
		if !ok1 || !ok2 || oh > 23 || om > 59 {
			return 0, 0, false
		}
		off = int64(oh*3600 + om*60)
		if rest[0] == '-' {
			off = -off
		}
	default:
		return 0, 0, false
	}
	wall = (day*86400+int64(h*3600+mi*60+sec))*1_000_000 + frac
	return wall, off, true
}
