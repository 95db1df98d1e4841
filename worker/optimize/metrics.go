package optimize

import (
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// metrics are the operationMetrics of one OPTIMIZE commit, in Spark's names
// (DeltaOperationMetrics.OPTIMIZE plus the OptimizeMetrics counts Spark returns to the user).
type metrics struct {
	removedFiles, addedFiles, removedBytes, addedBytes int64
	dvsRemoved, dvRowsRemoved                          int64
	bins                                               int64
	partitions                                         map[string]bool
	addedSizes                                         []int64
}

func newMetrics() *metrics { return &metrics{partitions: map[string]bool{}} }

func (m *metrics) addBin(rw *rewritten) {
	m.bins++
	m.partitions[rw.bin.Partition] = true
	m.removedFiles += int64(len(rw.bin.Files))
	m.removedBytes += rw.bin.Bytes
	m.dvsRemoved += rw.bin.DVFiles
	m.dvRowsRemoved += rw.purged
	for _, a := range rw.adds {
		m.addedFiles++
		m.addedBytes += a.Size
		m.addedSizes = append(m.addedSizes, a.Size)
	}
}

// apply records the metrics on the transaction. File-size percentiles are of the added files.
func (m *metrics) apply(tx *delta.Transaction, batches int) {
	set := tx.SetMetric
	set("numRemovedFiles", m.removedFiles)
	set("numAddedFiles", m.addedFiles)
	set("numRemovedBytes", m.removedBytes)
	set("numAddedBytes", m.addedBytes)
	set("numDeletionVectorsRemoved", m.dvsRemoved)
	set("numDeletionVectorRowsRemoved", m.dvRowsRemoved)
	set("partitionsOptimized", int64(len(m.partitions)))
	set("numBins", m.bins)
	set("numBatches", int64(batches))
	if len(m.addedSizes) > 0 {
		sizes := slices.Clone(m.addedSizes)
		slices.Sort(sizes)
		set("minFileSize", sizes[0])
		set("p25FileSize", percentile(sizes, 25))
		set("p50FileSize", percentile(sizes, 50))
		set("p75FileSize", percentile(sizes, 75))
		set("maxFileSize", sizes[len(sizes)-1])
	}
}

// percentile is the nearest-rank percentile of sorted values.
func percentile(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100 // ceil(p/100 · n), 1-based
	return sorted[max(i, 1)-1]
}
