package table

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// OrdersSchema is the schema of the demo "orders" table.
func OrdersSchema() *types.StructType {
	f := func(name, typ string, nullable bool) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(typ), Nullable: nullable}
	}
	return &types.StructType{Fields: []*types.StructField{
		f("order_id", types.TypeLong, false),
		f("order_ts", types.TypeTimestamp, false),
		f("order_date", types.TypeDate, false),
		f("region", types.TypeString, false),
		f("customer_id", types.TypeLong, false),
		{Name: "amount", Type: types.Decimal(12, 2), Nullable: false},
		f("quantity", types.TypeInteger, false),
		f("status", types.TypeString, false),
		f("note", types.TypeString, true),
	}}
}

// OrdersPartitionColumn is the partition column of a partitioned demo table.
const OrdersPartitionColumn = "order_date"

var (
	demoRegions  = []string{"eu-west", "eu-central", "us-east", "us-west", "ap-south", "ap-northeast", "sa-east", "af-south"}
	demoStatuses = []string{"placed", "paid", "shipped", "delivered", "cancelled", "returned"}
	demoNotes    = []string{"gift wrap", "leave at the door", "call before delivery", "fragile", "express", "ünïcode ✓ note"}
	// demoEpoch is 2024-01-01T00:00:00Z in microseconds.
	demoEpoch = int64(1704067200) * 1_000_000
)

// DemoFilesPerDay is how many demo files cover one order_date: file i holds orders of day i/4.
const DemoFilesPerDay = 4

// OrdersRows returns the rows of demo file number file: n orders with ids from firstID, timestamps in
// the file's day, a skewed region mix, and nulls in note. The rows are a pure function of the
// arguments.
func OrdersRows(seed uint64, file int, firstID int64, n int) []types.Struct {
	rng := rand.New(rand.NewPCG(seed, uint64(file)))
	day := int64(file / DemoFilesPerDay)
	rows := make([]types.Struct, n)
	for i := range n {
		ts := demoEpoch + day*86_400_000_000 + rng.Int64N(86_400_000_000)
		region := demoRegions[min(rng.IntN(len(demoRegions)), rng.IntN(len(demoRegions)))] // low ids more frequent
		var note types.Value
		if rng.IntN(4) == 0 {
			note = demoNotes[rng.IntN(len(demoNotes))]
		}
		rows[i] = types.Struct{
			firstID + int64(i),
			types.Timestamp(ts),
			types.Date(ts / 86_400_000_000),
			region,
			int64(1 + rng.IntN(50_000)),
			types.DecimalValue{Unscaled: big.NewInt(100 + rng.Int64N(500_000)), Scale: 2},
			int32(1 + rng.IntN(10)),
			demoStatuses[rng.IntN(len(demoStatuses))],
			note,
		}
	}
	return rows
}

// DemoOptions describe demo data.
type DemoOptions struct {
	Files, RowsPerFile int
	Partitioned        bool // by order_date (new tables only)
	Seed               uint64
}

// DemoResult reports what WriteDemoData did.
type DemoResult struct {
	Created        bool
	FirstVersion   delta.Version
	LastVersion    delta.Version
	Files          int
	Rows, Bytes    int64
	FirstID, EndID int64 // order ids [FirstID, EndID)
}

// WriteDemoData creates the orders table at tbl if it does not exist, then appends Files files of
// RowsPerFile rows, one blind-append commit per file, so the table ends up with many small files.
// Appending to an existing table continues the order ids after the highest one in the statistics.
// progress, when set, is called after each commit.
func WriteDemoData(ctx context.Context, tbl *delta.Table, opts DemoOptions, progress func(done int)) (*DemoResult, error) {
	if opts.Files <= 0 || opts.RowsPerFile <= 0 {
		return nil, fmt.Errorf("demo data needs at least one file and one row per file")
	}
	res := &DemoResult{}
	snap, err := tbl.Latest(ctx)
	var notFound *delta.VersionNotFoundError
	switch {
	case errors.As(err, &notFound) && notFound.Latest == delta.NoVersion:
		var parts []string
		if opts.Partitioned {
			parts = []string{OrdersPartitionColumn}
		}
		snap, err = tbl.Create(ctx, delta.CreateOptions{Schema: OrdersSchema(), PartitionColumns: parts,
			Name: "orders", Description: "deltakeeper demo data", Configuration: map[string]string{}})
		if err != nil && !errors.Is(err, delta.ErrTableExists) {
			return nil, err
		}
		if errors.Is(err, delta.ErrTableExists) {
			if snap, err = tbl.Latest(ctx); err != nil {
				return nil, err
			}
		} else {
			res.Created = true
		}
	case err != nil:
		return nil, err
	}
	if snap.Schema().String() != OrdersSchema().String() {
		return nil, fmt.Errorf("table %s exists with another schema (%s); demo data only appends to an orders table", tbl.Location(), snap.Schema())
	}
	firstID, startFile, err := demoContinuation(snap)
	if err != nil {
		return nil, err
	}
	res.FirstID, res.EndID = firstID, firstID
	for i := range opts.Files {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		rows := OrdersRows(opts.Seed, startFile+i, res.EndID, opts.RowsPerFile)
		a, err := Append(ctx, snap, rows, WriteOptions{})
		if err != nil {
			return res, err
		}
		if i == 0 {
			res.FirstVersion = a.Commit.Version
		}
		res.LastVersion = a.Commit.Version
		res.Files += len(a.Files)
		res.Rows += a.Rows
		for _, f := range a.Files {
			res.Bytes += f.Size
		}
		res.EndID += int64(opts.RowsPerFile)
		if progress != nil {
			progress(i + 1)
		}
		if snap, err = tbl.Latest(ctx); err != nil {
			return res, err
		}
	}
	return res, nil
}

// demoContinuation returns the next order id (one past the highest in the statistics) and the
// next file number (the snapshot version: every demo file was one commit after the create), which
// continues the per-file day and random stream even after compaction removed files.
func demoContinuation(snap *delta.Snapshot) (int64, int, error) {
	var next int64
	for _, f := range snap.Files() {
		st, ok, err := snap.Stats(f)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			return 0, 0, fmt.Errorf("file %s has no statistics; cannot continue the order ids", f.Path)
		}
		if c, ok := st.Column("order_id"); ok && c.Max != nil {
			next = max(next, c.Max.(int64)+1)
		}
	}
	return next, int(snap.Version()), nil
}
