package table

import "context"

// SetBeforeDeleteCommit installs a hook that runs just before DeleteWhere commits, and returns a
// function removing it.
func SetBeforeDeleteCommit(hook func(ctx context.Context) error) (restore func()) {
	beforeDeleteCommit = hook
	return func() { beforeDeleteCommit = nil }
}
