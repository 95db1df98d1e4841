package parquetio

import (
	"sort"
	"sync"
)

// rewriteTask is one unit of work: a column of an output row group (lane ≥ 0), or a whole output row
// group through the logical path (lane == generalTask).
type rewriteTask struct {
	group int
	lane  int
}

const generalTask = -1

// scheduler hands tasks to workers so that every lane runs its tasks one at a time and in row group
// order (a lane holds a read position and an encoder), while at most `ahead` row groups beyond the one
// being written are in flight: memory stays at a few row groups whatever the input size.
type scheduler struct {
	mu       sync.Mutex
	cond     *sync.Cond
	groups   []*outGroup
	pending  []rewriteTask
	next     int // next group to enqueue
	window   int // groups below window may be enqueued
	ahead    int // groups allowed beyond the one being written
	busy     []bool
	genBusy  bool
	results  [][]*encodedChunk
	err      error
	finished bool
}

func newScheduler(groups []*outGroup, lanes, ahead int) *scheduler {
	s := &scheduler{groups: groups, busy: make([]bool, lanes), results: make([][]*encodedChunk, len(groups)), ahead: ahead, window: 1 + ahead}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// enqueue adds the tasks of groups that entered the window; expensive columns go first so the row
// group's tail is short.
func (s *scheduler) enqueue() {
	for s.next < len(s.groups) && s.next < s.window {
		g := s.groups[s.next]
		s.results[s.next] = make([]*encodedChunk, len(s.busy))
		if g.general {
			s.pending = append(s.pending, rewriteTask{group: s.next, lane: generalTask})
		} else {
			tasks := make([]rewriteTask, len(s.busy))
			for j := range tasks {
				tasks[j] = rewriteTask{group: s.next, lane: j}
			}
			sort.SliceStable(tasks, func(a, b int) bool { return g.cost[tasks[a].lane] > g.cost[tasks[b].lane] })
			s.pending = append(s.pending, tasks...)
		}
		s.next++
	}
}

// take blocks until a task is runnable; false when there is nothing left to do or the rewrite failed.
func (s *scheduler) take() (rewriteTask, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.err != nil || s.finished {
			return rewriteTask{}, false
		}
		s.enqueue()
		// Tasks of one lane are queued in group order: the first one met is the only one that may run.
		seen := make(map[int]bool)
		for i, t := range s.pending {
			if seen[t.lane] {
				continue
			}
			seen[t.lane] = true
			if (t.lane == generalTask && s.genBusy) || (t.lane >= 0 && s.busy[t.lane]) {
				continue
			}
			s.pending = append(s.pending[:i], s.pending[i+1:]...)
			if t.lane == generalTask {
				s.genBusy = true
			} else {
				s.busy[t.lane] = true
			}
			return t, true
		}
		if s.next >= len(s.groups) && len(s.pending) == 0 {
			return rewriteTask{}, false
		}
		s.cond.Wait()
	}
}

// done records a task's chunks (one for a column task, all for a general one) or its error.
func (s *scheduler) done(t rewriteTask, chunks []*encodedChunk, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.lane == generalTask {
		s.genBusy = false
		if err == nil {
			copy(s.results[t.group], chunks)
		}
	} else {
		s.busy[t.lane] = false
		if err == nil {
			s.results[t.group][t.lane] = chunks[0]
		}
	}
	if err != nil && s.err == nil {
		s.err = err
	}
	s.cond.Broadcast()
}

// chunk waits for the chunk of column j of group k.
func (s *scheduler) chunk(k, j int) (*encodedChunk, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.err != nil {
			return nil, s.err
		}
		if r := s.results[k]; r != nil && r[j] != nil {
			c := r[j]
			r[j] = nil
			return c, nil
		}
		s.cond.Wait()
	}
}

// written slides the window past group k.
func (s *scheduler) written(k int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results[k] = nil
	s.window = k + 2 + s.ahead
	s.cond.Broadcast()
}

// fail stops every worker.
func (s *scheduler) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
	s.cond.Broadcast()
}

func (s *scheduler) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finished = true
	s.cond.Broadcast()
}
