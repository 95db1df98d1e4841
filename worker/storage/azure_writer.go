package storage

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// Create implements Store with staged blocks: blocks of BlockSize bytes are staged (Put Block) as they
// fill, so memory stays at one block, and Close commits the list (Put Block List), which makes the blob
// appear, or replace the previous one, at once. An object smaller than one block is one Put Blob.
//
// Staged blocks that are never committed (Abort, a failed Close, a killed writer) are invisible to
// reads and listings, and the service discards them a week after they were staged, or as soon as
// the blob's name is written again. No API deletes them earlier, so there is nothing for Abort or
// Leftovers to remove (doc.go).
func (s *AzureStore) Create(ctx context.Context, key string) (Writer, error) {
	b, err := s.blob(key)
	if err != nil {
		return nil, err
	}
	var id [8]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails
	return &azureWriter{ctx: ctx, s: s, key: key, blob: b, blockSize: s.cfg.BlockSize, writer: hex.EncodeToString(id[:])}, nil
}

// azureWriter is not safe for concurrent use. Blocks are staged one at a time, in order.
type azureWriter struct {
	ctx       context.Context
	s         *AzureStore
	key       string
	blob      *blockblob.Client
	blockSize int64
	// writer makes this upload's block IDs its own: a concurrent Create of the same key stages other
	// IDs, so neither commits the other's bytes.
	writer string

	buf    []byte
	blocks []string // base64 block IDs staged so far
	done   bool
	err    error
}

func (w *azureWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("write %s: %w", w.s.uri(w.key), errClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	written, err := bufferParts(&w.buf, int(w.blockSize), p, w.stageBlock)
	if err != nil {
		w.fail(err)
		return written, w.err
	}
	return written, nil
}

// stageBlock sends the buffered bytes as the next block, the TLS connection checking its integrity.
func (w *azureWriter) stageBlock() error {
	if len(w.blocks) >= maxAzureBlocks {
		return fmt.Errorf("create %s: the object needs more than %d blocks of %d bytes: raise the Azure block size",
			w.s.uri(w.key), maxAzureBlocks, w.blockSize)
	}
	// Every ID of a blob must have the same length: writer (16 hex digits) + 6-digit block number.
	id := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s-%06d", w.writer, len(w.blocks)))
	_, err := w.blob.StageBlock(w.ctx, id, streaming.NopCloser(bytes.NewReader(w.buf)), nil)
	if err != nil {
		return w.s.azureError(fmt.Sprintf("stage block %d of", len(w.blocks)), w.key, err)
	}
	w.blocks = append(w.blocks, id)
	w.buf = w.buf[:0]
	return nil
}

// Close stages what is left and commits the block list; on failure nothing becomes visible.
func (w *azureWriter) Close() error {
	if w.done {
		return fmt.Errorf("close %s: %w", w.s.uri(w.key), errClosed)
	}
	w.done = true
	if w.err != nil {
		return w.err
	}
	if len(w.blocks) == 0 {
		_, err := w.blob.Upload(w.ctx, streaming.NopCloser(bytes.NewReader(w.buf)), nil)
		w.buf = nil
		if err != nil {
			return w.s.azureError("close", w.key, err)
		}
		return nil
	}
	if len(w.buf) > 0 {
		if err := w.stageBlock(); err != nil {
			w.fail(err)
			return w.err
		}
	}
	w.buf = nil
	if _, err := w.blob.CommitBlockList(w.ctx, w.blocks, nil); err != nil {
		w.fail(w.s.azureError("commit", w.key, err))
		return w.err
	}
	return nil
}

// Abort discards the upload: the staged blocks stay uncommitted, which is invisible (see Create).
func (w *azureWriter) Abort() error {
	w.done = true
	w.buf = nil
	return nil
}

func (w *azureWriter) fail(err error) {
	if w.err == nil {
		w.err = err
	}
	w.buf = nil
}
