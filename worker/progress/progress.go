// Package progress carries the counts of long work (files and bytes done out of a total) from the engines
// (optimize, cluster, vacuum, ingest, merge) to whoever shows them: a progress bar on a terminal, periodic
// lines in a log. The engines report through their context, so reporting needs no new parameters and costs
// nothing when nobody listens. It is a leaf package: it imports nothing of the project.
package progress

import "context"

// Reporter receives the counts. Implementations must be safe for concurrent use: engines advance from
// their worker goroutines.
type Reporter interface {
	// Start begins a phase of work with its totals; a total below zero is unknown.
	Start(phase string, files, bytes int64)
	// Advance adds finished work to the current phase.
	Advance(files, bytes int64)
}

type key struct{}

// With returns a context whose engines report to r.
func With(ctx context.Context, r Reporter) context.Context {
	return context.WithValue(ctx, key{}, r)
}

func from(ctx context.Context) Reporter {
	r, _ := ctx.Value(key{}).(Reporter)
	return r
}

// Start begins a phase on ctx's reporter, if any.
func Start(ctx context.Context, phase string, files, bytes int64) {
	if r := from(ctx); r != nil {
		r.Start(phase, files, bytes)
	}
}

// Advance adds finished work on ctx's reporter, if any.
func Advance(ctx context.Context, files, bytes int64) {
	if r := from(ctx); r != nil {
		r.Advance(files, bytes)
	}
}
