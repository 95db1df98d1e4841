package scaleout

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxShares bounds the shares of one run (an Indexed Job's completions).
const MaxShares = 100

// Share names one share of a run: index Index of Count, reading the snapshot at Version.
type Share struct {
	RunID   string
	Index   int
	Count   int
	Version int64
}

var runIDPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$`)

// ParseShare reads "i/N" (the Indexed Job passes "$(JOB_COMPLETION_INDEX)/N").
func ParseShare(s string) (index, count int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		index, err = strconv.Atoi(a)
		if err == nil {
			count, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("--share %q: give index/count, e.g. 0/3", s)
	}
	if count < 1 || count > MaxShares || index < 0 || index >= count {
		return 0, 0, fmt.Errorf("--share %q: the count must be 1..%d and the index 0..count-1", s, MaxShares)
	}
	return index, count, nil
}

// Validate checks a share's fields.
func (s Share) Validate() error {
	switch {
	case !runIDPattern.MatchString(s.RunID):
		return fmt.Errorf("run id %q: use 1-63 lower-case letters, digits, '-' and '.' (a Job name)", s.RunID)
	case s.Count < 1 || s.Count > MaxShares || s.Index < 0 || s.Index >= s.Count:
		return fmt.Errorf("share %d/%d: the count must be 1..%d and the index 0..count-1", s.Index, s.Count, MaxShares)
	case s.Version < 0:
		return fmt.Errorf("share %d/%d: --at-version must be given (the snapshot every share plans from)", s.Index, s.Count)
	}
	return nil
}

func (s Share) String() string {
	return fmt.Sprintf("share %d/%d of run %s at version %d", s.Index, s.Count, s.RunID, s.Version)
}

// Balance assigns n items to count shares, balanced by weight: the heaviest first, each to the share
// with the least weight so far (ties to the lower index). key orders items of equal weight, so the
// assignment is a pure function of the items: every share computes the same one. It returns, per share,
// the item indexes in their original order.
func Balance(n, count int, weight func(int) int64, key func(int) string) [][]int {
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(weight(b), weight(a)), strings.Compare(key(a), key(b)), cmp.Compare(a, b))
	})
	shares := make([][]int, count)
	load := make([]int64, count)
	for _, i := range order {
		best := 0
		for s := 1; s < count; s++ {
			if load[s] < load[best] {
				best = s
			}
		}
		shares[best] = append(shares[best], i)
		load[best] += weight(i)
	}
	for _, s := range shares {
		slices.Sort(s)
	}
	return shares
}

// Contiguous cuts n items, already in a meaningful order (a clustering range order), into count
// consecutive runs of about equal weight; a share may get none. It returns each share's [lo, hi).
func Contiguous(n, count int, weight func(int) int64) [][2]int {
	var total int64
	for i := range n {
		total += weight(i)
	}
	out := make([][2]int, count)
	lo := 0
	var acc int64
	for s := range count {
		hi := lo
		// Share s ends where the running total passes (s+1)/count of the whole; the last takes the rest.
		bound := total * int64(s+1) / int64(count)
		for hi < n && (s == count-1 || acc+weight(hi)/2 < bound) {
			acc += weight(hi)
			hi++
		}
		out[s] = [2]int{lo, hi}
		lo = hi
	}
	return out
}
