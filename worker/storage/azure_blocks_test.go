package storage_test

import (
	"errors"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Close commits every block it staged, so a completed Create leaves no uncommitted blocks behind;
// an aborted one leaves its staged blocks uncommitted and the name absent (Azure discards them, see
// doc.go).
func TestAzureCreate_CommitsEveryStagedBlock(t *testing.T) {
	srv := azurite.Start(t)
	cfg := srv.AzureConfig()
	cfg.BlockSize = testPartSize
	st, err := storage.Open(ctx, srv.Location("blocks"), storage.Config{Azure: cfg})
	if err != nil {
		t.Fatal(err)
	}
	az := st.(*storage.AzureStore)
	blockList := func(key string) (committed, uncommitted int) {
		t.Helper()
		resp, err := az.Container().NewBlockBlobClient(az.Prefix()+key).GetBlockList(ctx, blockblob.BlockListTypeAll, nil)
		if err != nil {
			t.Fatalf("listing the blocks of %s: %v", key, err)
		}
		return len(resp.CommittedBlocks), len(resp.UncommittedBlocks)
	}
	data := randomBytes(9, 3*testPartSize+5)
	w, err := st.Create(ctx, "done.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if committed, uncommitted := blockList("done.parquet"); committed != 4 || uncommitted != 0 {
		t.Fatalf("after Close: %d committed and %d uncommitted blocks, want 4 and 0", committed, uncommitted)
	}
	if got := mustGet(t, st, "done.parquet"); string(got) != string(data) {
		t.Fatal("committed blob differs from what was written")
	}

	w, err = st.Create(ctx, "aborted.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Stat(ctx, "aborted.parquet"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("aborted Create: Stat err = %v, want ErrNotFound", err)
	}
}
