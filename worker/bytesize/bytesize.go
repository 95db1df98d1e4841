// Package bytesize parses the sizes people and tables write: on the command line, what deltakeeper itself
// prints ("64.0 MiB"), Kubernetes quantities ("2Mi") and Spark sizes ("128m", "2mb"); in table properties,
// Spark's stricter grammar, which other engines read too.
//
// Every unit is binary: k, m, g, t and p are powers of 1024 whatever the spelling (2m = 2mb = 2Mi = 2MiB =
// 2097152 bytes), as Spark's byteStringAsBytes and Delta's delta.targetFileSize read them. There are no
// decimal (1000-based) units: "2mb" meaning 2,000,000 bytes would disagree with Spark's spark.sql.files.
// maxPartitionBytes and with Delta.
//
// It is a leaf package: it imports only the standard library.
package bytesize

import (
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// Hint says what to write; errors end with it.
const Hint = "write bytes (268435456) or a number with a unit: 256m, 256mb, 256Mi, 256MiB, 1.5g " +
	"(k, m, g, t, p are powers of 1024, as in Spark and Delta)"

// shifts maps every accepted unit spelling, lower-cased, to its power of two.
var shifts = map[string]uint{
	"": 0, "b": 0,
	"k": 10, "kb": 10, "ki": 10, "kib": 10,
	"m": 20, "mb": 20, "mi": 20, "mib": 20,
	"g": 30, "gb": 30, "gi": 30, "gib": 30,
	"t": 40, "tb": 40, "ti": 40, "tib": 40,
	"p": 50, "pb": 50, "pi": 50, "pib": 50,
}

// sparkUnits are the units Spark's byteStringAsBytes knows: a table property must stay readable by Spark.
var sparkUnits = map[string]bool{"": true, "b": true, "k": true, "kb": true, "m": true, "mb": true,
	"g": true, "gb": true, "t": true, "tb": true, "p": true, "pb": true}

// sizeSyntax is a decimal number with an optional fraction, optional blanks, and an optional unit.
var sizeSyntax = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)\s*([a-zA-Z]*)$`)

// Parse reads a size written on the command line: "268435456", "256m", "256mb", "256Mi", "256MiB",
// "64.0 MiB", "1.5GiB", "10g" (units are case-insensitive and binary; a fraction is rounded to the nearest
// byte). The error echoes s and says what to write.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	m := sizeSyntax.FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf("size %q is not a number with an optional unit; %s", s, Hint)
	}
	unit := strings.ToLower(m[2])
	shift, ok := shifts[unit]
	if !ok {
		return 0, fmt.Errorf("size %q has an unknown unit %q; %s", s, m[2], Hint)
	}
	value, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, fmt.Errorf("size %q is not a number with an optional unit; %s", s, Hint)
	}
	value.Mul(value, new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), shift)))
	// Round half up to whole bytes: "64.1 MiB", as printed, is not a whole number of bytes.
	value.Add(value, big.NewRat(1, 2))
	n := new(big.Int).Quo(value.Num(), value.Denom())
	if !n.IsInt64() {
		return 0, fmt.Errorf("size %q is too large: at most 8 EiB", s)
	}
	return n.Int64(), nil
}

// ParseSpark reads a size as Spark's byteStringAsBytes does, for table properties such as
// delta.targetFileSize that Spark and other engines read too: a whole number with an optional unit (b, k/kb,
// m/mb, g/gb, t/tb, p/pb, case-insensitive, binary). "64MiB" and "1.5g" are refused here, since Spark would
// refuse to read the table's property.
func ParseSpark(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	m := sizeSyntax.FindStringSubmatch(t)
	if m == nil || strings.Contains(m[1], ".") || !sparkUnits[m[2]] {
		return 0, fmt.Errorf("size %q is not a whole number with an optional unit b, k, kb, m, mb, g, gb, t, tb, p or pb "+
			"(Spark reads table properties; write 268435456 or 256m)", s)
	}
	return Parse(t)
}

// Format renders n bytes the way deltakeeper prints sizes ("64.0 MiB"); Parse reads the result back.
func Format(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
