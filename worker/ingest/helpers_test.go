package ingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a source directory and a table directory on local disk.
type fixture struct {
	t     *testing.T
	src   string
	tbl   *delta.Table
	clock time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(filepath.Join(dir, "table"))
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, src: src, tbl: delta.NewTable(store), clock: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// put writes a source file whose modification time advances with every call (files are taken
// oldest first).
func (fx *fixture) put(key, content string) {
	fx.t.Helper()
	p := filepath.Join(fx.src, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		fx.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		fx.t.Fatal(err)
	}
	fx.clock = fx.clock.Add(time.Second)
	if err := os.Chtimes(p, fx.clock, fx.clock); err != nil {
		fx.t.Fatal(err)
	}
}

func (fx *fixture) options(formatName string, kv map[string]string, evo format.Evolution) Options {
	fx.t.Helper()
	fo, err := format.ParseOptions(formatName, kv, evo)
	if err != nil {
		fx.t.Fatal(err)
	}
	return Options{Source: fx.src, Format: fo, Logger: quiet}
}

func (fx *fixture) run(o Options) *Report {
	fx.t.Helper()
	rep, err := Run(context.Background(), fx.tbl, o)
	if err != nil {
		fx.t.Fatalf("ingest: %v", err)
	}
	return rep
}

func (fx *fixture) snapshot() *delta.Snapshot {
	fx.t.Helper()
	snap, err := fx.tbl.Latest(context.Background())
	if err != nil {
		fx.t.Fatal(err)
	}
	return snap
}

// rows scans the table and renders each row as "col=value ..." of the named columns, sorted.
func (fx *fixture) rows(cols ...string) []string {
	fx.t.Helper()
	snap := fx.snapshot()
	scan, err := table.NewScan(snap, table.ScanOptions{Columns: cols})
	if err != nil {
		fx.t.Fatal(err)
	}
	var out []string
	if _, err := scan.Run(context.Background(), func(batch []types.Struct) error {
		for _, r := range batch {
			parts := make([]string, len(r))
			for i, v := range r {
				parts[i] = fmt.Sprintf("%s=%s", cols[i], render(v))
			}
			out = append(out, strings.Join(parts, " "))
		}
		return nil
	}); err != nil {
		fx.t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func render(v types.Value) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case types.DecimalValue:
		return x.String()
	case types.Struct:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case types.Array:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case types.Map:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = render(e.Key) + ":" + render(e.Value)
		}
		return "map[" + strings.Join(parts, ",") + "]"
	case []byte:
		return fmt.Sprintf("%x", x)
	}
	return fmt.Sprint(v)
}

// txnVersions returns the stream's txn version after every commit of the table, in order.
func (fx *fixture) txnVersions(appID string) []int64 {
	fx.t.Helper()
	snap := fx.snapshot()
	var out []int64
	last := int64(-1)
	for v := delta.Version(0); v <= snap.Version(); v++ {
		s, err := fx.tbl.At(context.Background(), v)
		if err != nil {
			fx.t.Fatal(err)
		}
		if t, ok := s.Txn(appID); ok && t.Version != last {
			out = append(out, t.Version)
			last = t.Version
		}
	}
	return out
}
