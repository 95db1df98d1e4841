package cluster_test

import (
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestShareFiles_PartitionTheSelectionExactly(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(20_000, 0, 1), 10)
	f.clusterBy("a", "b")
	snap := f.latest()
	files := snap.Files()
	for count := 1; count <= 4; count++ {
		seen := map[string]int{}
		for i := range count {
			got := cluster.ShareFiles(snap, files, [][]string{{"a"}, {"b"}}, i, count)
			if !slices.Equal(got, cluster.ShareFiles(snap, files, [][]string{{"a"}, {"b"}}, i, count)) {
				t.Fatalf("share %d/%d differs between two computations", i, count)
			}
			for _, a := range got {
				seen[a.Path]++
			}
		}
		for _, a := range files {
			if seen[a.Path] != 1 {
				t.Fatalf("count %d: file %s is in %d shares", count, a.Path, seen[a.Path])
			}
		}
	}
}

func TestRunShare_ClusteringSharesCommitOnceWithTheSameRows(t *testing.T) {
	for _, b := range []struct {
		name string
		f    func(t *testing.T) *fixture
	}{
		{"local", func(t *testing.T) *fixture { return newFixture(t, nil) }},
		{"s3", func(t *testing.T) *fixture { return newFixtureOn(t, s3Store(t), nil) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			f := b.f(t)
			f.appendFiles(eventRows(30_000, 0, 1), 12)
			f.clusterBy("a", "b")
			before := f.latest()
			rows := f.rows()
			v := int64(before.Version())
			o := opts(func(o *cluster.Options) { o.Full = true })
			var inputs int
			cubes := map[string]bool{}
			for i := range 3 {
				rep, err := cluster.RunShare(f.ctx, before, o, scaleout.Share{RunID: "cl", Index: i, Count: 3, Version: v}, nil)
				if err != nil {
					t.Fatalf("share %d: %v", i, err)
				}
				if rep.Share.Units != 1 || rep.Op.Outcome != result.Succeeded {
					t.Fatalf("share %d: %+v %+v", i, rep.Op, rep.Share)
				}
				inputs += rep.Share.Inputs
			}
			if inputs != 12 {
				t.Fatalf("the shares rewrote %d files, the table has 12", inputs)
			}
			s := scaleout.Share{RunID: "cl", Count: 3, Version: v}
			ms, err := scaleout.WaitManifests(f.ctx, f.store, s, scaleout.WaitOptions{})
			if err != nil {
				t.Fatal(err)
			}
			crep, err := scaleout.Commit(f.ctx, f.tbl, s, ms)
			if err != nil {
				t.Fatal(err)
			}
			after := f.latest()
			sameRows(t, rows, f.rows())
			if after.Version() != before.Version()+1 || crep.Op.Name != "cluster" || crep.Op.FilesRemoved != 12 {
				t.Fatalf("versions %d → %d, commit %+v", before.Version(), after.Version(), crep.Op)
			}
			for _, a := range after.Files() {
				id, by := zcubeOf(t, a)
				cubes[id] = true
				if !slices.Equal(by, []string{"a", "b"}) {
					t.Fatalf("file %s clustered by %v", a.Path, by)
				}
			}
			if len(cubes) != 3 {
				t.Fatalf("three shares wrote %d ZCubes, want one each", len(cubes))
			}
			if ci := after.CommitInfo(); ci == nil || ci.OperationParameters["clusterBy"] != `["a","b"]` || ci.OperationParameters["scaleOutRun"] != "cl" {
				t.Fatalf("commitInfo %+v", ci)
			}
			if _, ok := after.Txn(scaleout.ScaleOutAppID); !ok {
				t.Fatal("no txn action recorded")
			}
		})
	}
}

func s3Store(t *testing.T) storage.Store {
	srv := s3server.Start(t)
	cfg := storage.Config{S3: storage.S3Config{Endpoint: srv.Endpoint, Region: s3server.Region,
		AccessKeyID: srv.AccessKeyID, SecretAccessKey: srv.SecretAccessKey, UsePathStyle: true}}
	store, err := storage.Open(t.Context(), srv.Location("lake/shares"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return store
}
