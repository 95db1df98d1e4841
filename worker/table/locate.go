package table

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// locator opens the data files named in the log. Relative paths (the usual case) and absolute URIs
// under the table root resolve to the table's own store; absolute URIs elsewhere (shallow clones,
// migrated tables) open a store per bucket (or the local filesystem root), kept for the life of the
// locator so that a thousand files in one bucket cost one client.
type locator struct {
	table *delta.Table
	cfg   storage.Config

	mu     sync.Mutex
	stores map[string]storage.Store // by scheme://bucket
}

func newLocator(t *delta.Table, cfg storage.Config) *locator {
	return &locator{table: t, cfg: cfg, stores: map[string]storage.Store{}}
}

// hasScheme reports whether a log path is an absolute URI ("s3://…", "file:/…").
func hasScheme(p string) bool {
	i := strings.IndexByte(p, ':')
	if i <= 0 {
		return false
	}
	for _, c := range p[:i] {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// resolve returns the store and key holding the file a log path names.
func (l *locator) resolve(ctx context.Context, logPath string) (storage.Store, string, error) {
	if strings.HasPrefix(logPath, "/") {
		// A rooted path is absolute on the table's file system (delta.ObjectKey reads it so too).
		if t, err := url.Parse(l.table.Location()); err == nil {
			logPath = t.Scheme + "://" + t.Host + logPath
		}
	}
	if !hasScheme(logPath) {
		key, err := delta.ObjectKey(l.table.Location(), logPath)
		if err != nil {
			return nil, "", err
		}
		return l.table.Store(), key, nil
	}
	uri, err := url.PathUnescape(logPath)
	if err != nil {
		return nil, "", fmt.Errorf("log path %q is not a valid URI: %w", logPath, err)
	}
	if key, ok := storage.Relative(l.table.Store(), uri); ok {
		return l.table.Store(), key, nil
	}
	loc, err := storage.ParseLocation(uri)
	if err != nil {
		return nil, "", fmt.Errorf("log path %q: %w", logPath, err)
	}
	id := loc.Scheme + "://" + loc.Bucket
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.stores[id]; ok {
		if key, ok := storage.Relative(s, uri); ok {
			return s, key, nil
		}
	}
	s, key, err := storage.OpenURI(ctx, uri, l.cfg)
	if err != nil {
		return nil, "", fmt.Errorf("open %s (a data file outside the table): %w", uri, err)
	}
	l.stores[id] = s
	return s, key, nil
}

// open opens the data file a log path names.
func (l *locator) open(ctx context.Context, logPath string) (storage.ReaderAt, error) {
	s, key, err := l.resolve(ctx, logPath)
	if err != nil {
		return nil, err
	}
	r, err := s.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", storage.URI(s, key), err)
	}
	return r, nil
}
