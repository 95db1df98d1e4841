package ingest

import (
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
)

func TestRun_JSONCreatesTableAndCommitsEachFileOnce(t *testing.T) {
	fx := newFixture(t)
	fx.put("a.json", `{"id":1,"name":"x"}`+"\n"+`{"id":2,"name":"y","score":1.5}`+"\n")
	fx.put("day=1/b.json", `{"ID":3,"name":"z","score":2}`+"\n")
	fx.put("_SUCCESS", "")
	fx.put(".hidden.json", `{"id":99}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	o.MaxFilesPerTrigger = 1
	rep := fx.run(o)
	if len(rep.Batches) != 2 || rep.Backlog.Files != 0 {
		t.Fatalf("batches %d backlog %+v, want 2 batches and no backlog", len(rep.Batches), rep.Backlog)
	}
	want := []string{"id=1 name=x score=null", "id=2 name=y score=1.5", "id=3 name=z score=2"}
	if got := fx.rows("id", "name", "score"); !slices.Equal(got, want) {
		t.Fatalf("rows\n%q\nwant\n%q", got, want)
	}
	if got := fx.txnVersions(rep.StreamID); !slices.Equal(got, []int64{0, 1}) {
		t.Fatalf("txn versions %v, want [0 1]", got)
	}
	// Running the same stream again finds nothing new and commits nothing.
	v := fx.snapshot().Version()
	rep = fx.run(o)
	if len(rep.Batches) != 0 || fx.snapshot().Version() != v {
		t.Fatalf("second run committed %d batches (version %d → %d)", len(rep.Batches), v, fx.snapshot().Version())
	}
	fx.put("c.json", `{"id":4,"name":"w"}`)
	rep = fx.run(o)
	if len(rep.Batches) != 1 || rep.Batches[0].BatchID != 2 || rep.Batches[0].Rows != 1 {
		t.Fatalf("third run: %+v", rep.Batches)
	}
}
