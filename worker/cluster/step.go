package cluster

import (
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// step times one clustering step (Optimize, ZOrder) and reports its error as the Op's outcome, so every
// return path of the step fills the Op the same way.
type step struct {
	op    *result.Op
	start time.Time
}

func newStep(name string) *step { return &step{op: &result.Op{Name: name}, start: time.Now()} }

func (s *step) finish(err error) (*result.Op, error) {
	s.op.DurationMs = time.Since(s.start).Milliseconds()
	if err != nil {
		s.op.Outcome, s.op.Reason = result.Classify(err)
		s.op.Message = err.Error()
	}
	return s.op, err
}

// prepareRewrite applies the option defaults and asks the features gate whether the table may be
// rewritten at all; both refusals say what to change.
func prepareRewrite(snap *delta.Snapshot, opts Options) (Options, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return opts, result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: %w", snap.Table().Location(), err))
	}
	if err := snap.CheckOperation(delta.OpRewrite); err != nil {
		return opts, result.Refuse(result.ReasonUnsupportedFeature, err)
	}
	return opts, nil
}
