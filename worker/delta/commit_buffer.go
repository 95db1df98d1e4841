package delta

// chunkedBuffer collects a commit's JSON in chunks that are never copied while it grows, and
// Bytes joins them in one allocation of the exact size: a commit of N bytes peaks at 2N, where a
// bytes.Buffer growing by doubling allocates ~4N in total and can hold 3N at once.
type chunkedBuffer struct {
	chunks [][]byte
	n      int
}

// Chunks grow with the content, from a few KiB for the usual commit to 1 MiB.
const minCommitChunk, maxCommitChunk = 4 << 10, 1 << 20

func (b *chunkedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1]) == cap(b.chunks[len(b.chunks)-1]) {
			b.chunks = append(b.chunks, make([]byte, 0, min(max(b.n, len(p), minCommitChunk), maxCommitChunk)))
		}
		last := &b.chunks[len(b.chunks)-1]
		k := min(len(p), cap(*last)-len(*last))
		*last = append(*last, p[:k]...)
		p = p[k:]
	}
	b.n += n
	return n, nil
}

// Bytes returns the content; the chunks are released.
func (b *chunkedBuffer) Bytes() []byte {
	if len(b.chunks) == 1 {
		out := b.chunks[0]
		b.chunks = nil
		return out
	}
	out := make([]byte, 0, b.n)
	for _, c := range b.chunks {
		out = append(out, c...)
	}
	b.chunks = nil
	return out
}
