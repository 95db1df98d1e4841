package delta

import (
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Clock is the time source of commits, in-commit timestamps and retention decisions. It is the
// Now of k8s.io/utils/clock.PassiveClock, declared here so that this package stays free of
// Kubernetes imports.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// Table is a Delta table at a storage location: the entry point for snapshots, transactions,
// checkpoints and log cleanup. It holds no table state itself and is safe for concurrent use.
type Table struct {
	store storage.Store
	clock Clock
}

// Option configures a Table.
type Option func(*Table)

// WithClock injects the clock (tests use a fake one).
func WithClock(c Clock) Option { return func(t *Table) { t.clock = c } }

// NewTable returns the table rooted at the store.
func NewTable(store storage.Store, opts ...Option) *Table {
	t := &Table{store: store, clock: realClock{}}
	for _, o := range opts {
		o(t)
	}
	return t
}

// Location is the table root URI, for messages.
func (t *Table) Location() string { return t.store.Location() }

// Store is the table's storage.
func (t *Table) Store() storage.Store { return t.store }
