package optimize

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// ingest appends one demo file as the ingest path would and returns its commit and added files.
func ingest(t *testing.T, tbl *delta.Table) (*delta.CommitResult, []*delta.AddFile) {
	t.Helper()
	res, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: 1, RowsPerFile: 100, Seed: 5}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var added []*delta.AddFile
	for _, a := range commitActions(t, tbl.Store(), res.LastVersion) {
		if a.Add != nil {
			added = append(added, a.Add)
		}
	}
	return &delta.CommitResult{Version: res.LastVersion}, added
}

func setProperty(t *testing.T, tbl *delta.Table, key, value string) {
	t.Helper()
	if _, err := table.ApplyDeclaration(t.Context(), tbl, table.Declaration{Properties: map[string]string{key: value}}); err != nil {
		t.Fatal(err)
	}
}

func TestAutoCompact_CompactsOnlyTouchedPartitionsWithEnoughSmallFiles(t *testing.T) {
	// Demo file i holds day i/4: days 0-4 hold four files, day 5 two, and the ingested file 22 lands
	// on day 5 as well.
	tbl := demoTable(t, localStore(t), 22, 100, true)
	setProperty(t, tbl, PropAutoCompact, "true")
	committed, added := ingest(t, tbl)
	touched := added[0].PartitionValues[0].Value
	before := latest(t, tbl)
	wantRows := rowsAt(t, before)
	small := 0
	for _, f := range before.Files() {
		if f.PartitionValues[0].Value == touched {
			small++
		}
	}
	rep, err := AutoCompact(t.Context(), tbl, committed, added, AutoCompactOptions{MinNumFiles: small})
	if err != nil || rep == nil || rep.Op.Outcome != result.Succeeded {
		t.Fatalf("auto compaction: %+v, %v", rep, err)
	}
	after := latest(t, tbl)
	sameRows(t, "after auto compaction", rowsAt(t, after), wantRows)
	for _, f := range after.Files() {
		day := f.PartitionValues[0].Value
		if rewritten := !f.DataChange; rewritten != (day == touched) {
			t.Errorf("file %s of partition %s: rewritten=%v", f.Path, day, rewritten)
		}
	}
	if small != 3 || rep.FilesRemoved != small {
		t.Errorf("removed %d files, want the %d of the touched partition", rep.FilesRemoved, small)
	}
	ci := commitActions(t, tbl.Store(), after.Version())[0].CommitInfo
	if ci.Operation != "OPTIMIZE" || ci.OperationParameters["auto"] != "true" {
		t.Errorf("commitInfo %+v", ci)
	}
}

func TestAutoCompact_DoesNothingUnlessEnabledAndNeeded(t *testing.T) {
	cases := []struct {
		name     string
		property string // delta.autoOptimize.autoCompact, "" for unset
		minFiles int
	}{
		{"the property is unset", "", 1},
		{"the property is false", "false", 1},
		{"too few small files in the touched partition", "true", 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl := demoTable(t, localStore(t), 8, 100, true)
			if c.property != "" {
				setProperty(t, tbl, PropAutoCompact, c.property)
			}
			committed, added := ingest(t, tbl)
			rep, err := AutoCompact(t.Context(), tbl, committed, added, AutoCompactOptions{MinNumFiles: c.minFiles})
			if err != nil || rep != nil {
				t.Fatalf("report %+v, error %v; want neither", rep, err)
			}
			if latest(t, tbl).Version() != committed.Version {
				t.Fatal("auto compaction committed")
			}
		})
	}
}

func TestAutoCompact_DefaultsAreSparks(t *testing.T) {
	o := AutoCompactOptions{}.withDefaults()
	if o.MinNumFiles != 50 || o.MaxFileSize != 128<<20 || o.MinFileSize != 64<<20 || o.MaxPartitions != 128 {
		t.Errorf("defaults %+v", o)
	}
	for v, want := range map[string]bool{"true": true, "auto": true, "LEGACY": true, "false": false} {
		got, err := autoCompactEnabled(delta.TableProperties{PropAutoCompact: v})
		if err != nil || got != want {
			t.Errorf("%s: %v %v", v, got, err)
		}
	}
	if on, _ := autoCompactEnabled(delta.TableProperties{propLegacyAutoOptimize: "true"}); !on {
		t.Error("the legacy delta.autoOptimize=true must enable auto compaction")
	}
	if _, err := autoCompactEnabled(delta.TableProperties{PropAutoCompact: "yes"}); err == nil {
		t.Error("a malformed value must be an error")
	}
}

// racingStore lets another compaction of the same partition win just before our commit lands.
type racingStore struct {
	storage.Store
	race func()
}

func (s *racingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if s.race != nil && bytes.Contains(data, []byte(`"auto":"true"`)) {
		race := s.race
		s.race = nil
		race()
	}
	return s.Store.PutIfAbsent(ctx, key, data)
}

func TestAutoCompact_SkipsALostRaceWithoutFailing(t *testing.T) {
	store := localStore(t)
	tbl := demoTable(t, store, 18, 100, true) // the ingested file joins two others on day 4
	setProperty(t, tbl, PropAutoCompact, "true")
	committed, added := ingest(t, tbl)
	touched := added[0].PartitionValues[0].Value
	racing := &racingStore{Store: store}
	racing.race = func() {
		where, _ := expr.Parse("order_date = '" + touched + "'")
		if _, err := Run(t.Context(), delta.NewTable(store), Options{Where: where}, nil); err != nil {
			t.Errorf("competing compaction: %v", err)
		}
	}
	wantRows := latestRows(t, tbl)
	rep, err := AutoCompact(t.Context(), delta.NewTable(racing), committed, added, AutoCompactOptions{MinNumFiles: 1})
	if err != nil || rep == nil || rep.Op.Outcome != result.NothingToDo || !strings.Contains(rep.Op.Message, "skipped") {
		t.Fatalf("report %+v, error %v; want a skipped run and no error", rep, err)
	}
	sameRows(t, "after the lost race", latestRows(t, tbl), wantRows)
	if o := orphans(t, tbl); len(o) > 0 {
		t.Fatalf("the lost auto compaction left files behind: %v", o)
	}
}
