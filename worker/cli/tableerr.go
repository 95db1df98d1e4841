package cli

import (
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/bytesize"
	"github.com/deltakeeper/deltakeeper/worker/errclass"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// tableError gives errors from reading or changing a table the outcome and reason the result
// reports (see worker/errclass, the one place that decides).
func tableError(err error) error { return errclass.Of(err) }

// badArg is a refusal for an invalid flag.
func badArg(format string, args ...any) error {
	return result.Refuse(result.ReasonBadArgument, fmt.Errorf(format, args...))
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// humanBytes renders a size in binary units ("64.0 MiB"), which the size flags read back.
func humanBytes(n int64) string { return bytesize.Format(n) }

// schemaTree writes a schema as an indented tree.
func schemaTree(b *strings.Builder, st *types.StructType, indent string) {
	for _, f := range st.Fields {
		null := ""
		if !f.Nullable {
			null = " NOT NULL"
		}
		switch t := f.Type.(type) {
		case *types.StructType:
			fmt.Fprintf(b, "%s%s: struct%s\n", indent, f.Name, null)
			schemaTree(b, t, indent+"  ")
		default:
			fmt.Fprintf(b, "%s%s: %s%s\n", indent, f.Name, f.Type, null)
		}
	}
}
