package cluster

import "math"

// rowKey is one row's curve position and its global row number (input files in order, live rows in
// file order).
type rowKey struct {
	pos uint64
	row uint32
}

// sortKeys sorts by position, ties in row order (stable), with an LSD radix sort on 16-bit digits:
// O(n) and free of comparisons, where a comparison sort of tens of millions of keys would dominate
// the clustering time. Digits on which every key agrees are skipped, so short curve positions cost
// fewer passes.
func sortKeys(keys []rowKey) {
	if len(keys) < 2 {
		return
	}
	var or, and uint64 = 0, ^uint64(0)
	for _, k := range keys {
		or |= k.pos
		and &= k.pos
	}
	varying := or ^ and
	buf := make([]rowKey, len(keys))
	src, dst := keys, buf
	var count [1 << 16]int
	for shift := uint(0); shift < 64; shift += 16 {
		if varying>>shift&0xffff == 0 {
			continue
		}
		clear(count[:])
		for _, k := range src {
			count[k.pos>>shift&0xffff]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, k := range src {
			d := k.pos >> shift & 0xffff
			dst[count[d]] = k
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
	}
}

// cutOutputs splits the sorted rows into n ≈ total/target output files of equal estimated size (so
// no small remainder file is left behind for the next run to pick up), estimating each row's size from
// its input file: rowBytes[fileOf(row)]. It returns the rank at which each output starts.
func cutOutputs(sorted []rowKey, fileOf func(row uint32) int, rowBytes []float64, target int64) []int {
	if len(sorted) == 0 {
		return nil
	}
	var total float64
	for _, k := range sorted {
		total += rowBytes[fileOf(k.row)]
	}
	n := max(1, int(math.Floor(total/float64(target)+0.5)))
	share := total / float64(n)
	starts := []int{0}
	var acc float64
	for r, k := range sorted {
		if acc >= share*float64(len(starts)) && len(starts) < n {
			starts = append(starts, r)
		}
		acc += rowBytes[fileOf(k.row)]
	}
	return starts
}
