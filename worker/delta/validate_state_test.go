package delta

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const (
	testProtocol = `{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}`
	schemaIDP    = `{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}},{\"name\":\"p\",\"type\":\"string\",\"nullable\":true,\"metadata\":{}}]}`
)

func metaDataLine(schema, partitionColumns string) string {
	s := ""
	if schema != "-" {
		s = `"schemaString":"` + schema + `",`
	}
	return `{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},` + s + `"partitionColumns":` + partitionColumns + `,"configuration":{}}}`
}

// handTable writes commit 0 (commitInfo, protocol, the given metaData) and later commits as given.
func handTable(t *testing.T, metaData string, commits ...[]string) *Table {
	t.Helper()
	tbl := NewTable(newTestStore(t), WithClock(newFakeClock(testEpoch)))
	putCommit(t, tbl, 0, []string{`{"commitInfo":{"operation":"CREATE TABLE"}}`, testProtocol, metaData})
	for i, c := range commits {
		putCommit(t, tbl, Version(i+1), append([]string{`{"commitInfo":{"operation":"WRITE"}}`}, c...))
	}
	return tbl
}

func TestLoad_ValidatesMetadataForEveryReader(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, metaData, want string
	}{
		{"no schemaString", metaDataLine("-", "[]"), "has no schemaString"},
		{"empty schemaString", metaDataLine("", "[]"), "has no schemaString"},
		{"schemaString not JSON", metaDataLine("{not json", "[]"), "has a schemaString that does not parse"},
		{"partition column not in the schema", metaDataLine(schemaIDP, `["day"]`), `partition column "day", which is not a top-level column`},
		{"partition column twice", metaDataLine(schemaIDP, `["p","p"]`), `partition column "p" twice`},
		{"duplicate column names", metaDataLine(strings.Replace(schemaIDP, `\"p\"`, `\"ID\"`, 1), "[]"), `two columns named "id" and "ID"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := handTable(t, c.metaData)
			_, err := tbl.Latest(ctx)
			if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), CommitKey(0)) {
				t.Fatalf("Latest: err = %v, want ErrCorruptTable naming %s and %q", err, CommitKey(0), c.want)
			}
			if strings.Contains(err.Error(), "unexpected end of JSON input") {
				t.Fatalf("the message does not say what is wrong: %v", err)
			}
			if _, err := tbl.State(ctx, NoVersion); !errors.Is(err, ErrCorruptTable) {
				t.Fatalf("State: err = %v", err)
			}
		})
	}
}

func TestLoad_ValidatesFileActions(t *testing.T) {
	ctx := context.Background()
	md := metaDataLine(schemaIDP, "[]")
	// Refused for every reader.
	for _, c := range []struct {
		name   string
		commit []string
		want   string
	}{
		{"path escaping the table", []string{cAdd("../other/x.parquet", "")}, "escapes the table root"},
		{"encoded path escaping the table", []string{cAdd("%2E%2E/x.parquet", "")}, "escapes the table root"},
		{"same path added twice", []string{cAdd("a.parquet", ""), cAdd("a.parquet", dvA)}, "adds file a.parquet twice"},
		{"same path removed twice", []string{cRemove("a.parquet", ""), cRemove("a.parquet", "")}, "removes file a.parquet twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := handTable(t, md, c.commit)
			_, err := tbl.Latest(ctx)
			if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrCorruptTable and %q", err, c.want)
			}
			if _, err := tbl.At(ctx, 0); err != nil {
				t.Fatalf("at 0, before the bad commit: %v", err)
			}
		})
	}
	// An absolute path outside the table (a shallow clone's file) leaves the log readable but
	// blocks every write.
	tbl := handTable(t, md, []string{cAdd("a.parquet", ""), cAdd("s3://elsewhere/t/b.parquet", "")})
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.CheckOperation(OpRead); err != nil {
		t.Fatalf("read: %v", err)
	}
	for _, op := range []Operation{OpVacuum, OpRewrite, OpCheckpoint, OpAppend} {
		if err := snap.CheckOperation(op); !errors.Is(err, ErrUnsupportedTable) || !strings.Contains(err.Error(), "s3://elsewhere/t/b.parquet lies outside the table") {
			t.Fatalf("%s: err = %v", op, err)
		}
	}
}

func TestLoad_ALogWithNothingToStartFromNeverSaysVersionMinusOne(t *testing.T) {
	ctx := context.Background()
	md := metaDataLine(schemaIDP, "[]")
	tbl := handTable(t, md, []string{cAdd("a.parquet", "")}, []string{cAdd("b.parquet", "")})
	must(t, tbl.Store().Delete(ctx, CommitKey(0)))
	for _, load := range []func() error{
		func() error { _, err := tbl.Latest(ctx); return err },
		func() error { _, err := tbl.At(ctx, 1); return err },
		func() error { _, err := tbl.VersionAtTime(ctx, testEpoch); return err },
	} {
		err := load()
		if err == nil || strings.Contains(err.Error(), "-1") || !errors.Is(err, ErrCorruptTable) {
			t.Fatalf("err = %v", err)
		}
	}
}
