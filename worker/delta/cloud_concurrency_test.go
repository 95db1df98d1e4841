package delta

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/internal/testutil/gcsserver"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The commit path on the Azure and GCS emulators: a table created and appended to by racing
// transactions on an az:// (and gs://) location, each commit in the log exactly once when read back.

func TestConcurrency_GoroutinesRacingOnAzureEachCommitOnce(t *testing.T) {
	srv := azurite.Start(t)
	cfg := storage.Config{Azure: srv.AzureConfig()}
	// An az:// location takes the account from the configuration, as delta-rs users write it.
	store, err := storage.Open(context.Background(), "az://"+srv.Container+"/race", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.Location("race"); store.Location() != want {
		t.Fatalf("store location %s, want the canonical %s", store.Location(), want)
	}
	tbl := NewTable(store)
	if _, err := tbl.Create(context.Background(), CreateOptions{Schema: testTable(t).schema}); err != nil {
		t.Fatal(err)
	}
	raceGoroutines(t, tbl, 4, 4)
}

func TestConcurrency_GoroutinesRacingOnGCSEachCommitOnce(t *testing.T) {
	srv := gcsserver.Start(t)
	store, err := storage.Open(context.Background(), srv.Location("race"), storage.Config{GCS: srv.GCSConfig()})
	if err != nil {
		t.Fatal(err)
	}
	tbl := NewTable(store)
	if _, err := tbl.Create(context.Background(), CreateOptions{Schema: testTable(t).schema}); err != nil {
		t.Fatal(err)
	}
	raceGoroutines(t, tbl, 4, 4)
}
