package table

import (
	"sync/atomic"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// countingReader counts the bytes a Parquet reader actually reads from a data file (footer, the
// pages of the columns it decodes), which is what a scan reports: the log's add.size is a claim that
// can be wrong, and a projection reads only part of a file. ReadAt may be called concurrently.
type countingReader struct {
	storage.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.ReaderAt.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}
