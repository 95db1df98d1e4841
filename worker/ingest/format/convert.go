package format

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// javaLayout translates a Spark (java.time) pattern into a Go layout: the letters Spark users write
// (yyyy, MM, dd, HH, mm, ss, S… fractions, XXX/Z zones, quoted literals) map one to one.
func javaLayout(p string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(p); {
		c := p[i]
		n := 1
		for i+n < len(p) && p[i+n] == c {
			n++
		}
		switch c {
		case 'y':
			if n == 2 {
				b.WriteString("06")
			} else {
				b.WriteString("2006")
			}
		case 'M':
			switch n {
			case 1:
				b.WriteString("1")
			case 2:
				b.WriteString("01")
			case 3:
				b.WriteString("Jan")
			default:
				b.WriteString("January")
			}
		case 'd':
			b.WriteString(map[bool]string{true: "2", false: "02"}[n == 1])
		case 'H':
			b.WriteString("15")
		case 'h':
			b.WriteString(map[bool]string{true: "3", false: "03"}[n == 1])
		case 'a':
			b.WriteString("PM")
		case 'm':
			b.WriteString(map[bool]string{true: "4", false: "04"}[n == 1])
		case 's':
			b.WriteString(map[bool]string{true: "5", false: "05"}[n == 1])
		case 'S':
			b.WriteString(strings.Repeat("0", n))
		case 'X', 'x':
			switch n {
			case 1:
				b.WriteString("Z07")
			case 2:
				b.WriteString("Z0700")
			default:
				b.WriteString("Z07:00")
			}
		case 'Z':
			b.WriteString("-0700")
		case '\'':
			end := strings.IndexByte(p[i+1:], '\'')
			if end < 0 {
				return "", fmt.Errorf("pattern %q has an unclosed quote", p)
			}
			b.WriteString(p[i+1 : i+1+end])
			i += end + 2
			continue
		default:
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				return "", fmt.Errorf("pattern %q: letter %q is not supported (use y M d H h m s S a X Z)", p, c)
			}
			b.WriteString(strings.Repeat(string(c), n))
		}
		i += n
	}
	return b.String(), nil
}

// ISO 8601 forms accepted without a configured format.
var (
	isoDates      = []string{"2006-01-02"}
	isoTimestamps = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}
)

func (o *Options) compileLayouts() error {
	o.dateLayout, o.tsLayout = isoDates, isoTimestamps
	if o.DateFormat != "" {
		l, err := javaLayout(o.DateFormat)
		if err != nil {
			return fmt.Errorf("option dateFormat: %w", err)
		}
		o.dateLayout = []string{l}
	}
	if o.TimestampFormat != "" {
		l, err := javaLayout(o.TimestampFormat)
		if err != nil {
			return fmt.Errorf("option timestampFormat: %w", err)
		}
		o.tsLayout = []string{l}
	}
	return nil
}

func parseTime(layouts []string, s string) (time.Time, error) {
	var first error
	for _, l := range layouts {
		t, err := time.Parse(l, s)
		if err == nil {
			return t, nil
		}
		if first == nil {
			first = err
		}
	}
	return time.Time{}, first
}

// convertError is a conversion failure before the file, row and column are known.
type convertError struct{ msg string }

func (e *convertError) Error() string { return e.msg }

func badValue(s string, t types.DataType, why string) error {
	if len(s) > 64 {
		s = s[:61] + "..."
	}
	if why != "" {
		why = ": " + why
	}
	return &convertError{fmt.Sprintf("cannot convert %q to %s%s", s, t, why)}
}

// parseText converts the text of a CSV field (or a JSON string) to a primitive type.
func (o *Options) parseText(s string, t *types.PrimitiveType) (types.Value, error) {
	switch t.Name {
	case types.TypeString:
		if !utf8.ValidString(s) {
			return nil, &convertError{"the text is not valid UTF-8: re-encode the file as UTF-8"}
		}
		return s, nil
	case types.TypeBinary:
		return []byte(s), nil
	case types.TypeBoolean:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, badValue(s, t, "want true or false")
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		bits := map[string]int{types.TypeByte: 8, types.TypeShort: 16, types.TypeInteger: 32, types.TypeLong: 64}[t.Name]
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			if ne := (*strconv.NumError)(nil); errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
				return nil, badValue(s, t, "out of range")
			}
			return nil, badValue(s, t, "not an integer")
		}
		return intValue(n, t.Name), nil
	case types.TypeFloat, types.TypeDouble:
		f, err := parseFloat(strings.TrimSpace(s))
		if err != nil {
			return nil, badValue(s, t, "not a number")
		}
		if t.Name == types.TypeFloat {
			if !math.IsInf(f, 0) && math.Abs(f) > math.MaxFloat32 {
				return nil, badValue(s, t, "out of range")
			}
			return float32(f), nil
		}
		return f, nil
	case types.TypeDecimal:
		r, ok := new(big.Rat).SetString(strings.TrimSpace(s))
		if !ok {
			return nil, badValue(s, t, "not a decimal number")
		}
		return decimalOf(r, s, t)
	case types.TypeDate:
		tm, err := parseTime(o.dateLayout, strings.TrimSpace(s))
		if err != nil {
			return nil, badValue(s, t, "want the date format "+o.formatName(o.DateFormat, "yyyy-MM-dd"))
		}
		days := tm.Unix() / 86400
		if tm.Unix() < 0 && tm.Unix()%86400 != 0 {
			days--
		}
		return types.Date(int32(days)), nil
	case types.TypeTimestamp:
		tm, err := parseTime(o.tsLayout, strings.TrimSpace(s))
		if err != nil {
			return nil, badValue(s, t, "want the timestamp format "+o.formatName(o.TimestampFormat, "ISO 8601"))
		}
		return types.Timestamp(tm.UnixMicro()), nil
	case types.TypeTimestampNTZ:
		tm, err := parseTime(o.tsLayout, strings.TrimSpace(s))
		if err != nil {
			return nil, badValue(s, t, "want the timestamp format "+o.formatName(o.TimestampFormat, "ISO 8601"))
		}
		_, off := tm.Zone()
		wall := tm.Add(time.Duration(off) * time.Second).UTC()
		return types.TimestampNTZ(wall.UnixMicro()), nil
	}
	return nil, badValue(s, t, "text cannot be read into this type")
}

func (o *Options) formatName(set, def string) string {
	if set != "" {
		return strconv.Quote(set)
	}
	return def
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "+Infinity", "Inf", "+Inf":
		return math.Inf(1), nil
	case "-Infinity", "-Inf":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, 64)
}

func intValue(n int64, name string) types.Value {
	switch name {
	case types.TypeByte:
		return int8(n)
	case types.TypeShort:
		return int16(n)
	case types.TypeInteger:
		return int32(n)
	}
	return n
}

// decimalOf converts an exact rational to decimal(p,s), refusing values that need rounding or more
// digits than the precision: a conversion never changes a number silently.
func decimalOf(r *big.Rat, text string, t *types.PrimitiveType) (types.Value, error) {
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
	if !scaled.IsInt() {
		return nil, badValue(text, t, fmt.Sprintf("more than %d digits after the point", t.Scale))
	}
	u := new(big.Int).Set(scaled.Num())
	if new(big.Int).Abs(u).Cmp(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)) >= 0 {
		return nil, badValue(text, t, fmt.Sprintf("more than %d digits", t.Precision))
	}
	return types.DecimalValue{Unscaled: u, Scale: t.Scale}, nil
}

// jsonNumber converts a JSON number (its literal text) to a primitive type.
func (o *Options) jsonNumber(lit string, t *types.PrimitiveType) (types.Value, error) {
	switch t.Name {
	case types.TypeString:
		return lit, nil
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong, types.TypeFloat, types.TypeDouble, types.TypeDecimal:
		return o.parseText(lit, t)
	case types.TypeTimestamp:
		// Spark reads a number into a timestamp as seconds since the epoch.
		r, ok := new(big.Rat).SetString(lit)
		if !ok {
			return nil, badValue(lit, t, "not a number")
		}
		us := new(big.Rat).Mul(r, big.NewRat(1e6, 1))
		q := new(big.Int).Quo(us.Num(), us.Denom())
		if !q.IsInt64() {
			return nil, badValue(lit, t, "out of range")
		}
		return types.Timestamp(q.Int64()), nil
	}
	return nil, badValue(lit, t, "a number cannot be read into this type")
}

// jsonString converts a JSON string to a primitive type: text is parsed like CSV text, binary is
// base64 (as Spark writes it).
func (o *Options) jsonString(s string, t *types.PrimitiveType) (types.Value, error) {
	if t.Name == types.TypeBinary {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, badValue(s, t, "binary columns take base64 text")
		}
		return b, nil
	}
	return o.parseText(s, t)
}
