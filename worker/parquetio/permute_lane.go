package parquetio

// write hands a batch to the lane's destination: the encoder, or Permute's capture.
func (l *lane) write(b *columnBatch) error {
	if l.sink != nil {
		return l.sink(b)
	}
	return l.enc.write(b)
}
