// Package runstats holds what the benchmark drivers report about their runs: medians of repeated
// measurements and the machine's load while they ran.
package runstats

import (
	"os"
	"sort"
	"strings"
)

// LoadAvg is the one-minute load average, or "?" where /proc/loadavg cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// Median is the median of f over the runs (the mean of the middle two for an even count).
func Median[T any](runs []T, f func(T) float64) float64 {
	v := make([]float64, len(runs))
	for i, r := range runs {
		v[i] = f(r)
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
