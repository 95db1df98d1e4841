package merge

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestUpsert_RandomisedAgainstAMapModel runs random upsert, update and delete batches (random and
// clustered keys, null keys, delete markers, duplicates deduplicated by --order-by, source files
// lacking a column) on a clustered table, with and without deletion vectors, and checks the rows
// after each against a map of key to row. (mtest's DuckDB model is the independent check; this one
// runs with the package's tests.)
func TestUpsert_RandomisedAgainstAMapModel(t *testing.T) {
	for _, dv := range []string{"false", "true"} {
		t.Run("dv="+dv, func(t *testing.T) {
			fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": dv})
			if _, err := table.ApplyDeclaration(t.Context(), fx.tbl, table.Declaration{ClusterBy: []string{"id"}, SetClusterBy: true}); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 11))
			model := map[int64]types.Struct{}
			var nulls []types.Struct // rows with a null key: never matched
			for f := range 8 {
				var rows []types.Struct
				for i := range 25 {
					id := int64(f*25 + i)
					r := row(id, id, "a")
					rows = append(rows, r)
					model[id] = r
				}
				fx.appendFile(rows...)
			}
			for round := range 30 {
				mode := []Mode{Upsert, Upsert, Update, Delete}[rng.IntN(4)]
				var lines []string
				type src struct {
					id      *int64
					name    *string
					v       int64
					deleted bool
				}
				var batch []src
				n := 1 + rng.IntN(8)
				base := rng.Int64N(260)
				withName := rng.IntN(2) == 0
				for range n {
					s := src{v: rng.Int64N(1000)}
					switch {
					case rng.IntN(10) == 0:
					case rng.IntN(2) == 0:
						id := base + rng.Int64N(5) // clustered
						s.id = &id
					default:
						id := rng.Int64N(260)
						s.id = &id
					}
					if withName {
						nm := fmt.Sprintf("r%d", round)
						s.name = &nm
					}
					s.deleted = rng.IntN(5) == 0
					batch = append(batch, s)
					line := fmt.Sprintf(`"v":%d,"gone":%v`, s.v, s.deleted)
					if s.id != nil {
						line += fmt.Sprintf(`,"id":%d`, *s.id)
					} else {
						line += `,"id":null`
					}
					if s.name != nil {
						line += fmt.Sprintf(`,"name":%q`, *s.name)
					}
					lines = append(lines, "{"+line+"}")
				}
				// The model: dedup by key, greatest v wins (later on ties).
				best := map[int64]int{}
				live := make([]bool, len(batch))
				for i, s := range batch {
					live[i] = true
					if s.id == nil {
						continue
					}
					if j, ok := best[*s.id]; ok {
						if batch[j].v <= s.v {
							live[j] = false
							best[*s.id] = i
						} else {
							live[i] = false
						}
						continue
					}
					best[*s.id] = i
				}
				for i, s := range batch {
					if !live[i] {
						continue
					}
					var name types.Value
					if s.name != nil {
						name = *s.name
					}
					if s.id == nil {
						if mode == Upsert && !s.deleted {
							nulls = append(nulls, types.Struct{nil, name, s.v, nil})
						}
						continue
					}
					old, matched := model[*s.id]
					switch {
					case matched && (mode == Delete || s.deleted):
						delete(model, *s.id)
					case matched:
						if s.name == nil {
							name = old[1] // a file without the column keeps the target's
						}
						model[*s.id] = types.Struct{*s.id, name, s.v, old[3]}
					case mode == Upsert && !s.deleted:
						model[*s.id] = types.Struct{*s.id, name, s.v, nil}
					}
				}
				rep := fx.merge(fx.source(lines...), Options{Mode: mode, Keys: []string{"id"}, DeleteColumn: "gone", OrderBy: "v"})
				var want []types.Struct
				for _, r := range model {
					want = append(want, r)
				}
				want = append(want, nulls...)
				got, exp := fx.rows(), wantRows(want)
				if strings.Join(got, "\n") != strings.Join(exp, "\n") {
					t.Fatalf("round %d (%s, batch %v): %+v\n got %d rows\nwant %d rows\n%s", round, mode, lines, rep, len(got), len(exp), diff(got, exp))
				}
			}
		})
	}
}

func wantRows(rows []types.Struct) []string { return want(rows...) }

func diff(got, exp []string) string {
	g, e := map[string]int{}, map[string]int{}
	for _, r := range got {
		g[r]++
	}
	for _, r := range exp {
		e[r]++
	}
	var b strings.Builder
	for r, n := range g {
		if e[r] != n {
			fmt.Fprintf(&b, "got %d× %s (want %d)\n", n, r, e[r])
		}
	}
	for r, n := range e {
		if _, ok := g[r]; !ok {
			fmt.Fprintf(&b, "missing %d× %s\n", n, r)
		}
	}
	return b.String()
}
