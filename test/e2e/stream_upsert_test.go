//go:build e2e

package e2e

// The upsert half of the streaming scenario: change records (NDJSON) for a few hundred SKUs keep arriving,
// some of them deletes; an upsert stream applies them by key, the latest record of a key winning (orderBy
// seq), and the host finds the table equal to the model, row for row.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

const (
	changeSKUs          = 300
	changesPerFile      = 400
	changeDeletePercent = 15
)

// changes writes change-record files and keeps the model: the state of every SKU after all of them.
type changes struct {
	store  storage.Store
	prefix string
	rng    *rand.Rand
	mu     sync.Mutex
	model  map[int64]int64 // sku -> qty
	seq    int64
	files  int
}

func newChanges(t *testing.T, prefix string) *changes {
	return &changes{store: s3Store(t), prefix: prefix, rng: rand.New(rand.NewPCG(14, 2026)), model: map[int64]int64{}}
}

// file writes one NDJSON file of change records: upserts, and deletes of existing and unknown SKUs.
func (c *changes) file(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var buf bytes.Buffer
	for range changesPerFile {
		c.seq++
		sku := 1 + c.rng.Int64N(changeSKUs)
		deleted := c.rng.IntN(100) < changeDeletePercent
		qty := c.rng.Int64N(1000)
		line, _ := json.Marshal(map[string]any{"sku": sku, "qty": qty, "seq": c.seq, "deleted": deleted})
		buf.Write(append(line, '\n'))
		if deleted {
			delete(c.model, sku)
		} else {
			c.model[sku] = qty
		}
	}
	key := fmt.Sprintf("%s/change-%05d.json", c.prefix, c.files)
	c.files++
	if err := c.store.Put(context.Background(), key, buf.Bytes()); err != nil {
		t.Errorf("writing %s: %v", key, err)
	}
}

// assertEqualsModel reads the table under prefix from the host and compares it with the model: every SKU
// the model holds exactly once, with its quantity, and no other.
func (c *changes) assertEqualsModel(t *testing.T, prefix string) {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, "s3://"+cfg.s3.bucket+"/"+prefix, storage.Config{S3: storage.S3Config{
		Endpoint: cfg.s3.endpoint, Region: cfg.s3.region, UsePathStyle: true,
		AccessKeyID: cfg.s3.accessKeyID, SecretAccessKey: cfg.s3.secretAccessKey,
	}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.NewTable(st).Latest(ctx)
	if err != nil {
		t.Fatalf("loading the upserted table from the host: %v", err)
	}
	scan, err := table.NewScan(snap, table.ScanOptions{Columns: []string{"sku", "qty"}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	if _, err := scan.Run(ctx, func(rows []types.Struct) error {
		for _, r := range rows {
			got[fmt.Sprint(r[0])] = append(got[fmt.Sprint(r[0])], fmt.Sprint(r[1]))
		}
		return nil
	}); err != nil {
		t.Fatalf("scanning the upserted table: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var wrong []string
	for sku, qty := range c.model {
		if q := got[fmt.Sprint(sku)]; len(q) != 1 || q[0] != fmt.Sprint(qty) {
			wrong = append(wrong, fmt.Sprintf("sku %d: table %v, model %d", sku, q, qty))
		}
	}
	for sku, q := range got {
		var id int64
		if _, err := fmt.Sscan(sku, &id); err != nil || !hasKey(c.model, id) {
			wrong = append(wrong, fmt.Sprintf("sku %s: table %v, deleted in the model", sku, q))
		}
	}
	if len(wrong) > 0 {
		if len(wrong) > 10 {
			wrong = append(wrong[:10], fmt.Sprintf("… %d more", len(wrong)-10))
		}
		t.Errorf("the upserted table differs from the model (%d change records): %v", c.seq, wrong)
	}
	t.Logf("the upserted table equals the model: %d SKUs after %d change records in %d files, version %d",
		len(c.model), c.seq, c.files, snap.Version())
}

func hasKey(m map[int64]int64, k int64) bool {
	_, ok := m[k]
	return ok
}
