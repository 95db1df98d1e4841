package torture

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// Checks named in failures.
const (
	// checkNoTempFiles: after the final vacuum (zero retention) and log cleanup, no temp file of an
	// interrupted write is left, in the data directories or in _delta_log.
	checkNoTempFiles = "no temp files after the final vacuum and log cleanup"
	// checkNoUploads: no incomplete multipart upload of a killed writer is left on S3.
	checkNoUploads = "no incomplete multipart uploads after the final vacuum"
	// checkClearCommitError: a run that failed after a lost acknowledgement says whether its commit
	// landed, in words a user can act on.
	checkClearCommitError = "a failed commit says whether it landed"
)

// verify fails the test when a check failed.
func verify(t testing.TB, check string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	t.Fatalf("%s: %v\n%s", check, err, replayHint(t))
}

// suiteFigures are what a run did, printed at the end (the figures `make torture` reports).
type suiteFigures struct {
	mu                         sync.Mutex
	kills, lateKills, commits  int
	faultRuns, faultRunsFailed int
	faultsInjected             int
	// keyedBatches were applied by the keyed writers' runs; keyedReplays are batches a run after a
	// kill ran again although the killed run had committed them (each must commit nothing).
	keyedBatches, keyedReplays int
	// keyedDVs sums the deletion vectors live after each judged run of a keyed writer.
	keyedDVs int
	// uncommittedData and uncommittedDVs are the files of killed runs that no commit added, found
	// before the final sweeps (whose vacuum must remove them).
	uncommittedData, uncommittedDVs int
	notes                           []string
}

var figures = &suiteFigures{}

func (f *suiteFigures) add(fn func(*suiteFigures)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *suiteFigures) String() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "torture figures (size %s, seed %d): %d kills of live processes (%d more landed after the process had exited), "+
		"%d commits in the concurrency test, %d fault runs (%d failed cleanly), %d faults injected\n",
		size.name, masterSeed, f.kills, f.lateKills, f.commits, f.faultRuns, f.faultRunsFailed, f.faultsInjected)
	fmt.Fprintf(&b, "  keyed writers: %d batches applied, %d replayed after a kill had committed them; %d deletion vectors live over the judged states\n",
		f.keyedBatches, f.keyedReplays, f.keyedDVs)
	fmt.Fprintf(&b, "  leftovers of killed runs before the final sweeps: %d data files and %d DV files that no commit added (the final zero-retention vacuum must remove them)\n",
		f.uncommittedData, f.uncommittedDVs)
	for _, n := range f.notes {
		fmt.Fprintf(&b, "  %s\n", n)
	}
	return b.String()
}
