package storage

import (
	"context"
	"fmt"

	"cloud.google.com/go/storage"
)

// Create implements Store with a resumable upload: chunks of ChunkSize bytes are sent as they fill, and
// the object appears (or replaces the previous one) only when Close finalises the upload. An object
// smaller than one chunk is sent in one request at Close.
//
// An upload that is never finalised (Abort, a failed Close, a killed writer) is invisible, holds no
// object, and GCS discards its session a week after it began; sessions cannot be listed, so there is
// nothing for Leftovers to report (doc.go).
func (s *GCSStore) Create(ctx context.Context, key string) (Writer, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, err
	}
	// Cancelling the writer's context is the SDK's way to abandon an upload.
	wctx, cancel := context.WithCancel(ctx)
	w := obj.NewWriter(wctx)
	w.ChunkSize = s.cfg.ChunkSize
	return &gcsWriter{s: s, key: key, w: w, cancel: cancel}, nil
}

type gcsWriter struct {
	s      *GCSStore
	key    string
	w      *storage.Writer
	cancel context.CancelFunc
	done   bool
	err    error
}

func (g *gcsWriter) Write(p []byte) (int, error) {
	if g.done {
		return 0, fmt.Errorf("write %s: %w", g.s.uri(g.key), errClosed)
	}
	if g.err != nil {
		return 0, g.err
	}
	n, err := g.w.Write(p)
	if err != nil {
		g.err = g.s.gcsError("write", g.key, err)
		g.cancel()
		_ = g.w.Close()
		return n, g.err
	}
	return n, nil
}

// Close finalises the upload; on failure nothing becomes visible.
func (g *gcsWriter) Close() error {
	if g.done {
		return fmt.Errorf("close %s: %w", g.s.uri(g.key), errClosed)
	}
	g.done = true
	defer g.cancel()
	if g.err != nil {
		return g.err
	}
	if err := g.w.Close(); err != nil {
		g.err = g.s.gcsError("close", g.key, err)
		return g.err
	}
	return nil
}

// Abort abandons the upload before it is finalised; after Close it does nothing.
func (g *gcsWriter) Abort() error {
	if g.done || g.err != nil {
		g.done = true
		return nil
	}
	g.done = true
	g.cancel()
	_ = g.w.Close() // returns the cancellation; waits for the upload goroutine to stop
	return nil
}
