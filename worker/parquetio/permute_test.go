package parquetio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// indexedSink collects outputs created in any order, as Permute writes them concurrently.
type indexedSink struct {
	mu   sync.Mutex
	outs map[int]*memWriter
}

func (s *indexedSink) create(i int) (storage.Writer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outs == nil {
		s.outs = map[int]*memWriter{}
	}
	if _, dup := s.outs[i]; dup {
		return nil, fmt.Errorf("output %d created twice", i)
	}
	w := &memWriter{}
	s.outs[i] = w
	return w, nil
}

func TestPermute_WritesEveryLiveRowInItsOutputAndRowGroupWithExactStatistics(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 6, 300, 7)
	live := liveRows(cases)
	cuts := []struct {
		name   string
		starts []int
	}{
		{"one output", []int{0}},
		{"uneven outputs", []int{0, 1, 250, 900}},
	}
	for _, par := range []int{1, 3} {
		for _, cut := range cuts {
			t.Run(fmt.Sprintf("%s, parallelism %d", cut.name, par), func(t *testing.T) {
				order := make([]uint32, len(live))
				for i := range order {
					order[i] = uint32(i)
				}
				rand.New(rand.NewPCG(uint64(par), 3)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
				var sink indexedSink
				res, err := Permute(context.Background(), rewriteInputs(cases), order, cut.starts, sink.create, RewriteOptions{
					Schema: schema, Parallelism: par, Writer: WriterOptions{RowGroupBytes: 20 << 10, RowGroupRows: 100, PageBytes: 4096},
				})
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != int64(len(live)) || len(res.Files) != len(cut.starts) {
					t.Fatalf("result: %d rows in %d files, want %d in %d", res.Rows, len(res.Files), len(live), len(cut.starts))
				}
				for k, start := range cut.starts {
					end := len(order)
					if k+1 < len(cut.starts) {
						end = cut.starts[k+1]
					}
					// Row groups of 100 rows take their stretch of the order, each in input order.
					want := make([]types.Struct, 0, end-start)
					for a := start; a < end; a += 100 {
						grp := slices.Clone(order[a:min(end, a+100)])
						slices.Sort(grp)
						for _, g := range grp {
							want = append(want, live[g])
						}
					}
					w := sink.outs[k]
					if w == nil || !w.closed {
						t.Fatalf("output %d missing or not closed", k)
					}
					assertRowsEqual(t, want, readAll(t, openBytes(t, w.Bytes()), schema, ReadOptions{}))
					assertStats(t, schema, want, res.Files[k])
				}
			})
		}
	}
}

func TestPermute_RejectsAnOrderThatDoesNotCoverTheRows(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 2, 50, 1)
	var sink indexedSink
	_, err := Permute(context.Background(), rewriteInputs(cases), []uint32{0, 1}, []int{0}, sink.create, RewriteOptions{Schema: schema})
	if err == nil || len(sink.outs) != 0 {
		t.Fatalf("err = %v, %d outputs; want an error before anything is written", err, len(sink.outs))
	}
}

// The rows are assigned to row groups by several workers at once; a row that two of them claim, in
// different outputs, is still found, and nothing is written.
func TestPermute_RefusesARowGivenTwiceAcrossOutputs(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 3, 60, 5)
	live := liveRows(cases)
	for name, bad := range map[string]uint32{"twice": 5, "not a live row": uint32(len(live))} {
		t.Run(name, func(t *testing.T) {
			order := make([]uint32, len(live))
			for i := range order {
				order[i] = uint32(i)
			}
			order[len(order)-1] = bad // in the last output's last row group, far from row 5 itself
			var sink indexedSink
			_, err := Permute(context.Background(), rewriteInputs(cases), order, []int{0, len(order) / 2}, sink.create,
				RewriteOptions{Schema: schema, Parallelism: 3, Writer: WriterOptions{RowGroupRows: 10}})
			if err == nil || len(sink.outs) != 0 {
				t.Fatalf("err = %v, %d outputs; want an error before anything is written", err, len(sink.outs))
			}
		})
	}
}

func TestPermuteSubset_TwoWavesWriteWhatOneCallWould(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 5, 200, 21)
	live := liveRows(cases)
	order := make([]uint32, len(live))
	for i := range order {
		order[i] = uint32(i)
	}
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	half := len(order) / 2
	opts := RewriteOptions{Schema: schema, Writer: WriterOptions{RowGroupRows: 100}}
	for w, part := range [][]uint32{order[:half], order[half:]} {
		var sink indexedSink
		res, err := PermuteSubset(context.Background(), rewriteInputs(cases), part, []int{0, len(part) / 3}, sink.create, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Rows != int64(len(part)) {
			t.Fatalf("wave %d: %d rows, want %d", w, res.Rows, len(part))
		}
		var got []types.Struct
		for k := range 2 {
			got = append(got, readAll(t, openBytes(t, sink.outs[k].Bytes()), schema, ReadOptions{})...)
		}
		var want []types.Struct
		for _, bounds := range [][2]int{{0, len(part) / 3}, {len(part) / 3, len(part)}} {
			for a := bounds[0]; a < bounds[1]; a += 100 {
				grp := slices.Clone(part[a:min(bounds[1], a+100)])
				slices.Sort(grp)
				for _, g := range grp {
					want = append(want, live[g])
				}
			}
		}
		assertRowsEqual(t, want, got)
	}
	// A row given twice is refused before anything is written.
	var sink indexedSink
	if _, err := PermuteSubset(context.Background(), rewriteInputs(cases), []uint32{3, 3}, []int{0}, sink.create, opts); err == nil || len(sink.outs) != 0 {
		t.Fatalf("duplicate row: err = %v, %d outputs", err, len(sink.outs))
	}
}
