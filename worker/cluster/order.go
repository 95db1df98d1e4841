package cluster

import (
	"math"
	"math/bits"
	"sync"
)

// rowKey is one row's curve position, its global row number (input files in order, live rows in
// file order) and its input file (which fills the struct's padding, and spares cutOutputs a search
// per row).
type rowKey struct {
	pos  uint64
	row  uint32
	file uint32
}

// maxDigitBits bounds a radix digit: 2^16 counters of 8 bytes per worker fit the L2 cache.
const maxDigitBits = 16

// minChunk is the fewest items (keys, rows, table entries) a worker of parallelChunks takes: below
// it, starting one costs more than it saves.
const minChunk = 1 << 16

// sortKeys sorts by position, ties in row order (stable), with an LSD radix sort: O(n) and free of
// comparisons, where a comparison sort of tens of millions of keys would dominate the clustering
// time. Only the bits that vary between keys are sorted on, in as few passes of at most
// maxDigitBits as they need and digits as narrow as those passes allow (a 20-bit Hilbert position
// takes two passes of 10 bits, whose 1,024 output streams stay in the cache, where 16-bit digits
// scatter to 65,536). Each pass runs on up to workers goroutines, each counting and then moving one
// contiguous chunk of the keys, chunk c's keys of a digit placed after those of chunks before it:
// the sort is on the critical path of a FULL run, with nothing else to overlap it. Being stable,
// the result does not depend on the number of workers.
func sortKeys(keys []rowKey, workers int) {
	n := len(keys)
	if n < 2 {
		return
	}
	chunks := splitChunks(n, workers)
	or, and := make([]uint64, len(chunks)), make([]uint64, len(chunks))
	parallelChunks(chunks, func(c int, lo, hi int) {
		o, a := uint64(0), ^uint64(0)
		for _, k := range keys[lo:hi] {
			o |= k.pos
			a &= k.pos
		}
		or[c], and[c] = o, a
	})
	var varying uint64
	for c := range chunks {
		varying |= or[c] ^ and[c]
	}
	if varying == 0 {
		return
	}
	low := uint(bits.TrailingZeros64(varying))
	span := uint(bits.Len64(varying)) - low
	passes := (span + maxDigitBits - 1) / maxDigitBits
	width := (span + passes - 1) / passes
	buckets := 1 << width
	mask := uint64(buckets - 1)
	counts := make([][]int, len(chunks))
	for c := range counts {
		counts[c] = make([]int, buckets)
	}
	src, dst := keys, make([]rowKey, n)
	for p := range passes {
		shift := low + p*width
		parallelChunks(chunks, func(c int, lo, hi int) {
			count := counts[c]
			clear(count)
			for _, k := range src[lo:hi] {
				count[k.pos>>shift&mask]++
			}
		})
		sum := 0
		for d := range buckets {
			for c := range counts {
				v := counts[c][d]
				counts[c][d] = sum
				sum += v
			}
		}
		parallelChunks(chunks, func(c int, lo, hi int) {
			next := counts[c]
			for _, k := range src[lo:hi] {
				d := k.pos >> shift & mask
				dst[next[d]] = k
				next[d]++
			}
		})
		src, dst = dst, src
	}
	if &src[0] != &keys[0] {
		parallelChunks(chunks, func(_ int, lo, hi int) { copy(keys[lo:hi], src[lo:hi]) })
	}
}

// splitChunks splits n items into up to workers contiguous chunks of at least minChunk items; it
// returns each chunk's end.
func splitChunks(n, workers int) []int {
	w := max(1, min(workers, n/minChunk))
	ends := make([]int, w)
	for c := range ends {
		ends[c] = n * (c + 1) / w
	}
	return ends
}

// parallelChunks runs fn on every chunk [lo, hi) at once, the last one on the calling goroutine.
func parallelChunks(ends []int, fn func(c, lo, hi int)) {
	var wg sync.WaitGroup
	lo := 0
	for c, hi := range ends[:len(ends)-1] {
		from := lo
		wg.Go(func() { fn(c, from, hi) })
		lo = hi
	}
	fn(len(ends)-1, lo, ends[len(ends)-1])
	wg.Wait()
}

// cutOutputs splits the sorted rows into n ≈ total/target output files of equal estimated size (so
// no small remainder file is left behind for the next run to pick up), estimating each row's size from
// its input file: rowBytes[file]. It returns the rank at which each output starts.
func cutOutputs(sorted []rowKey, rowBytes []float64, target int64) []int {
	if len(sorted) == 0 {
		return nil
	}
	var total float64
	for _, k := range sorted {
		total += rowBytes[k.file]
	}
	n := max(1, int(math.Floor(total/float64(target)+0.5)))
	share := total / float64(n)
	starts := []int{0}
	var acc float64
	for r, k := range sorted {
		if acc >= share*float64(len(starts)) && len(starts) < n {
			starts = append(starts, r)
		}
		acc += rowBytes[k.file]
	}
	return starts
}

// cutGroups is cutOutputs for an aligned rewrite: rows sort by group (the key bits from shift up),
// and each group's rows are cut on their own into max(1, round(bytes ÷ target)) outputs of equal
// estimated size, so that no output mixes two regions or levels. It returns each output's first rank
// and group.
func cutGroups(sorted []rowKey, rowBytes []float64, target int64, shift int) ([]int, []uint64) {
	var starts []int
	var groups []uint64
	for lo := 0; lo < len(sorted); {
		g := sorted[lo].pos >> shift
		hi := lo
		for hi < len(sorted) && sorted[hi].pos>>shift == g {
			hi++
		}
		for _, s := range cutOutputs(sorted[lo:hi], rowBytes, target) {
			starts, groups = append(starts, lo+s), append(groups, g)
		}
		lo = hi
	}
	return starts, groups
}
