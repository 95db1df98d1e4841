package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
)

// scheduleHorizon bounds the appends an escalation is credited with absorbing: past it a candidate's
// cost per cycle is its bytes over this many cycles, and the forecast of so distant a layout means
// little anyway.
const scheduleHorizon = 100

// candidate is one rewrite that escalate may add to an incremental run: the zcubes smallest ZCubes not
// yet selected (every clustered file when full), what it is forecast to leave, and what it costs.
//
// The cost is per cycle until the next escalation: the candidate's bytes divided by the runs they
// serve, this one and the absorbs appends of the recent size that are forecast to land before the gap
// breaks the bound again. A small prefix that leaves the layout just within the bound is paid again
// at the next run; a FULL costs the table but buys the most runs. The smallest prefix that meets the
// bound now is the cheapest only while the young ZCubes are small next to the table.
type candidate struct {
	zcubes   int
	files    int
	bytes    int64
	full     bool
	gap      float64 // forecast gap to FULL right after the run
	feasible bool    // gap within the bound
	absorbs  int     // appends forecast to land before the bound breaks (scheduleHorizon at most)
	perCycle float64 // bytes ÷ (absorbs + 1)
}

func (c candidate) String() string {
	what := fmt.Sprintf("%d ZCube(s)", c.zcubes)
	if c.full {
		what = "FULL"
	}
	absorbs := fmt.Sprintf("%d", c.absorbs)
	if c.absorbs >= scheduleHorizon {
		absorbs = fmt.Sprintf("≥%d", scheduleHorizon)
	}
	return fmt.Sprintf("%s %d bytes, gap %.3f, absorbs %s append(s), %.0f bytes/cycle", what, c.bytes, c.gap, absorbs, c.perCycle)
}

// candidates evaluates every prefix of the ZCubes not in merged, smallest first (up to
// maxEscalationCandidates−1 of them, then every clustered file), on top of the plain selection
// (merged, bytes of it, appendBytes of them new data).
func (m *layoutModel) candidates(merged []bool, bytes, appendBytes int64, bound float64) ([]candidate, error) {
	work := slices.Clone(merged)
	cubes := m.zcubes(merged)
	var out []candidate
	var c candidate
	for i, cube := range cubes {
		for _, f := range cube {
			work[m.indexOf[f]] = true
			c.files++
			c.bytes += f.Size
		}
		c.zcubes++
		last := i == len(cubes)-1
		if i >= maxEscalationCandidates-1 && !last {
			continue
		}
		c.full = last && !slices.Contains(work, false)
		gap, _, err := m.gap(work, bytes+c.bytes)
		if err != nil {
			return nil, err
		}
		c.gap, c.feasible = gap, gap <= bound
		c.absorbs = 0
		if c.feasible {
			if c.absorbs, err = m.absorbs(work, bytes+c.bytes, appendBytes, bound); err != nil {
				return nil, err
			}
		}
		c.perCycle = float64(c.bytes) / float64(c.absorbs+1)
		out = append(out, c)
	}
	return out, nil
}

// absorbs forecasts, on the worst column, how many appends of appendBytes land before the layout
// left by rewriting the marked files (bytes of them) falls more than bound below FULL on the grown
// table.
func (m *layoutModel) absorbs(merged []bool, bytes, appendBytes int64, bound float64) (int, error) {
	margin := m.reference() - layoutstats.GridSkipping(m.outputs(m.total), m.dims)
	floor := func(n int) float64 {
		return layoutstats.GridSkipping(m.outputs(m.total+int64(n)*appendBytes), m.dims) + margin - bound
	}
	shape := layoutstats.Appends{Files: m.outputs(appendBytes)}
	least := scheduleHorizon
	for c := range m.bounds {
		n, err := layoutstats.AppendsAbsorbed(m.bounds[c], merged, m.outputs(bytes), m.dims, shape, floor, scheduleHorizon)
		if err != nil {
			return 0, fmt.Errorf("clustering column %s: %w", m.names[c], err)
		}
		least = min(least, n)
	}
	return least, nil
}

// cheapest is the index of the feasible candidate of least cost per cycle (ties: fewer bytes, then
// fewer ZCubes); with none feasible, the last one (every clustered file, the most any run can do);
// −1 when there is no candidate.
func cheapest(cands []candidate) int {
	best := -1
	for i, c := range cands {
		if !c.feasible {
			continue
		}
		if best < 0 || c.perCycle < cands[best].perCycle ||
			(c.perCycle == cands[best].perCycle && c.bytes < cands[best].bytes) {
			best = i
		}
	}
	if best < 0 {
		return len(cands) - 1
	}
	return best
}

// why explains the choice: its cost per cycle and the alternatives' (the smallest prefix within the
// bound, the FULL, and the next cheapest).
func (e *escalation) why() string {
	if !e.choice.feasible {
		return "; no rewrite is forecast within the bound, so every clustered file is taken"
	}
	var alts []string
	seen := map[int]bool{}
	show := func(c candidate) {
		if !seen[c.zcubes] {
			seen[c.zcubes] = true
			alts = append(alts, c.String())
		}
	}
	byCost := slices.Clone(e.alternatives)
	slices.SortStableFunc(byCost, func(a, b candidate) int { return cmp.Compare(a.perCycle, b.perCycle) })
	if len(e.alternatives) > 0 { // smallest first
		show(e.alternatives[0])
	}
	if n := len(e.alternatives); n > 0 && e.alternatives[n-1].full {
		show(e.alternatives[n-1])
	}
	if len(byCost) > 0 {
		show(byCost[0])
	}
	s := fmt.Sprintf("; chosen as the least rewrite per cycle until the next escalation (appends of %d bytes): %s", e.appendBytes, e.choice)
	if len(alts) > 0 {
		s += "; alternatives: " + strings.Join(alts, "; ")
	}
	return s
}
