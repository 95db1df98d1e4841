package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/version"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// CommitResult reports a successful commit.
type CommitResult struct {
	Version  Version
	Attempts int
	// Winners are the concurrent commits this transaction was rebased onto.
	Winners []Version
	// CheckpointErr is set when the automatic post-commit checkpoint failed; the commit itself
	// succeeded and the next checkpoint will cover it.
	CheckpointErr error
	// Checkpointed is true when a checkpoint was written for Version.
	Checkpointed bool
}

// Commit writes the transaction as the next version with PutIfAbsent. When another writer wins
// a version, the winners are checked against this transaction's reads and writes (the protocol's
// conflict rules); compatible winners are rebased onto (in-commit timestamp and row ids
// recomputed) and the commit retried under the retry policy. Conflicts return a *ConflictError.
func (tx *Transaction) Commit(ctx context.Context) (*CommitResult, error) {
	if tx.committed {
		return nil, fmt.Errorf("table %s: transaction %s was already committed", tx.table.Location(), tx.txnID)
	}
	if err := tx.validate(); err != nil {
		return nil, err
	}
	rt, err := tx.snap.RowTracking()
	if err != nil {
		return nil, err
	}
	var rows *rowIDAssignment
	if rt.assigns() && tx.protocol().HasWriterFeature(FeatureRowTracking) {
		if rows, err = tx.planRowIDs(); err != nil {
			return nil, err
		}
	}
	state := commitState{version: tx.snap.version + 1, hwm: rt.HighWaterMark, prevICT: tx.snap.ict}
	res := &CommitResult{}
	policy := tx.opts.Retry
	for attempt := 1; ; attempt++ {
		res.Attempts = attempt
		if attempt > 1 {
			if err := sleepCtx(ctx, policy.backoff(attempt)); err != nil {
				return nil, err
			}
		}
		data, err := tx.serialize(state, rows)
		if err != nil {
			return nil, err
		}
		if tx.written == nil {
			tx.written = map[Version]bool{}
		}
		tx.written[state.version] = true
		err = tx.table.store.PutIfAbsent(ctx, CommitKey(state.version), data)
		if err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			// The write failed in a way that may hide its outcome (a lost acknowledgement): the
			// log tells whether it landed.
			final := attempt >= policy.maxAttempts()
			switch outcome, lerr := tx.lookUpOwnCommit(ctx, state.version, final); outcome {
			case commitLanded:
				err = nil
			case commitLostRace:
				err = storage.ErrAlreadyExists // someone else's commit is there
			case commitAbsent:
				if final {
					return nil, &CommitNotWrittenError{Table: tx.table.Location(), Version: state.version, Attempts: attempt, Err: err}
				}
				continue // nothing landed: write the same version again
			default:
				if errors.Is(lerr, ErrCorruptTable) {
					return nil, fmt.Errorf("table %s: %w", tx.table.Location(), lerr)
				}
				return nil, &CommitOutcomeUnknownError{Table: tx.table.Location(), TxnID: tx.txnID, Version: state.version,
					Idempotent: tx.idempotent(), Err: err, ReadErr: lerr}
			}
		}
		if err == nil {
			tx.committed = true
			res.Version = state.version
			tx.postCommit(ctx, res)
			return res, nil
		}
		if attempt >= policy.maxAttempts() {
			return nil, fmt.Errorf("table %s: lost the race for a new version %d times (last tried %d): %w",
				tx.table.Location(), attempt, state.version, ErrCommitRetriesExhausted)
		}
		winners, mine, err := tx.resolveConflicts(ctx, &state)
		if err != nil {
			return nil, err
		}
		if mine != NoVersion {
			// An earlier attempt did land (its acknowledgement was lost).
			tx.committed = true
			res.Version = mine
			tx.postCommit(ctx, res)
			return res, nil
		}
		res.Winners = append(res.Winners, winners...)
	}
}

// ErrCommitOutcomeUnknown is matched by CommitOutcomeUnknownError.
var ErrCommitOutcomeUnknown = errors.New("commit outcome unknown")

// CommitOutcomeUnknownError means a commit was sent, its acknowledgement was lost, and the log
// could not be read back (after retries) to tell whether it landed. Commit has already done
// everything that can be done from here; the message says what the next run will do.
type CommitOutcomeUnknownError struct {
	Table   string
	TxnID   string
	Version Version
	// Idempotent is set when running the operation again cannot apply it twice (every kind but a
	// plain append, which needs a txn action for that).
	Idempotent bool
	Err        error // the failed write
	ReadErr    error // the last failed read of the log
}

func (e *CommitOutcomeUnknownError) Error() string {
	next := "running it again is safe: the next run starts from the table as it then is, so a change that landed is not applied twice"
	if !e.Idempotent {
		next = fmt.Sprintf("an append repeated after it landed would add its rows twice: before appending again, check whether version %d's commitInfo carries txnId %s", e.Version, e.TxnID)
	}
	return fmt.Sprintf("table %s: the commit of version %d (txnId %s) was sent but the store's answer was lost (%v), "+
		"and the log could not be read back to tell whether it landed (%v); it either landed whole or not at all. "+
		"Data files written for it and not committed are deleted by a later vacuum; %s",
		e.Table, e.Version, e.TxnID, e.Err, e.ReadErr, next)
}

func (e *CommitOutcomeUnknownError) Unwrap() []error { return []error{ErrCommitOutcomeUnknown, e.Err} }

// CommitNotWrittenError means every attempt to write the commit failed and the log shows that
// none landed: the table is unchanged.
type CommitNotWrittenError struct {
	Table    string
	Version  Version
	Attempts int
	Err      error
}

func (e *CommitNotWrittenError) Error() string {
	return fmt.Sprintf("table %s: not committed: %d attempts to write version %d failed and the log shows none landed (last error: %v); "+
		"the table is unchanged and running again is safe", e.Table, e.Attempts, e.Version, e.Err)
}

func (e *CommitNotWrittenError) Unwrap() error { return e.Err }

// commitOutcome is what the log says about a commit whose write failed.
type commitOutcome int

const (
	commitUnknown  commitOutcome = iota
	commitLanded                 // the version holds this transaction
	commitLostRace               // the version holds another writer's commit
	commitAbsent                 // the version does not exist
)

// ambiguityReads is how often the log is read to settle a commit's outcome.
const ambiguityReads = 5

// absenceConfirmDelay is the pause before the read that confirms a final "not written".
const absenceConfirmDelay = time.Second

// lookUpOwnCommit reads version v to settle the outcome of a failed write, retrying failed reads
// with backoff. An absent version is conclusive at once unless final: before reporting "not
// committed" the absence is confirmed once more after a pause, in case the write was still in
// flight at the store.
func (tx *Transaction) lookUpOwnCommit(ctx context.Context, v Version, final bool) (commitOutcome, error) {
	var lastErr error
	absent := 0
	for i := 0; i < ambiguityReads; i++ {
		if i > 0 {
			pause := tx.opts.Retry.backoff(i + 2)
			if absent > 0 {
				// Confirming an absence: give a write still in flight at the store time to land,
				// since callers delete the files of a commit reported as not written.
				pause = max(pause, absenceConfirmDelay)
			}
			if err := sleepCtx(ctx, pause); err != nil {
				return commitUnknown, err
			}
		}
		ci, err := tx.table.readCommitInfo(ctx, v)
		switch {
		case err == nil && ci != nil && ci.TxnID == tx.txnID:
			return commitLanded, nil
		case err == nil:
			return commitLostRace, nil
		case errors.Is(err, storage.ErrNotFound):
			if absent++; !final || absent >= 2 {
				return commitAbsent, nil
			}
		case errors.Is(err, ErrCorruptTable):
			return commitUnknown, err // another writer's broken file: nothing to retry
		default:
			lastErr = err
		}
	}
	if absent > 0 && lastErr == nil {
		return commitAbsent, nil
	}
	return commitUnknown, lastErr
}

// idempotent reports whether repeating this transaction's operation cannot apply it twice: every
// kind but an append, whose rows would be added again unless a txn action guards it.
func (tx *Transaction) idempotent() bool { return tx.kind != OpAppend || len(tx.txns) > 0 }

// FindCommit looks for the commit of a transaction (by commitInfo.txnId) in versions from on.
func (t *Table) FindCommit(ctx context.Context, txnID string, from Version) (Version, bool, error) {
	for v := max(from, 0); ; v++ {
		ci, err := t.readCommitInfo(ctx, v)
		if errors.Is(err, storage.ErrNotFound) {
			return NoVersion, false, nil
		}
		if err != nil {
			return NoVersion, false, fmt.Errorf("table %s: read commit %d: %w", t.Location(), v, err)
		}
		if ci != nil && ci.TxnID == txnID {
			return v, true, nil
		}
	}
}

// commitState is what a rebase changes.
type commitState struct {
	version Version
	hwm     int64  // row-tracking high-water mark before this commit
	prevICT *int64 // in-commit timestamp of the previous version
}

// resolveConflicts reads every commit from state.version on, checks each against this
// transaction and rebases state onto them. It returns the winners, or the version of a commit
// that turns out to be this transaction's own.
func (tx *Transaction) resolveConflicts(ctx context.Context, state *commitState) ([]Version, Version, error) {
	var winners []Version
	for v := state.version; ; v++ {
		actions, err := tx.table.readCommit(ctx, v)
		if errors.Is(err, storage.ErrNotFound) {
			state.version = v
			return winners, NoVersion, nil
		}
		if err != nil && tx.written[v] && !errors.Is(err, ErrCorruptTable) {
			// The store refused this transaction's own write of v, and v cannot be read: it may be this
			// transaction's commit, whose files the caller must then keep.
			return nil, NoVersion, &CommitOutcomeUnknownError{Table: tx.table.Location(), TxnID: tx.txnID, Version: v,
				Idempotent: tx.idempotent(), Err: fmt.Errorf("the store refused the write of version %d", v), ReadErr: err}
		}
		if err != nil {
			return nil, NoVersion, fmt.Errorf("table %s: read winning commit %d: %w", tx.table.Location(), v, err)
		}
		w := summarize(v, actions)
		if w.commitInfo != nil && w.commitInfo.TxnID == tx.txnID {
			return nil, v, nil
		}
		if err := tx.checkConflict(w); err != nil {
			return nil, NoVersion, err
		}
		winners = append(winners, v)
		// Rebase: the next version's ICT must exceed the winner's, and row ids must start above
		// the winner's high-water mark.
		if w.commitInfo != nil && w.commitInfo.InCommitTimestamp != nil {
			state.prevICT = w.commitInfo.InCommitTimestamp
		}
		if d, ok := w.domains[DomainRowTracking]; ok && !d.Removed {
			hwm, err := parseHighWaterMark(d.Configuration)
			if err != nil {
				return nil, NoVersion, fmt.Errorf("table %s: winning commit %d: %w", tx.table.Location(), v, err)
			}
			state.hwm = max(state.hwm, hwm)
		}
	}
}

// readCommit reads every action of commit v, streaming the file; storage.ErrNotFound when the
// commit does not exist.
func (t *Table) readCommit(ctx context.Context, v Version) ([]*Action, error) {
	var actions []*Action
	err := readLogFile(ctx, t.store, CommitKey(v), readOptions{commitInfo: true}, func(a *Action) error {
		actions = append(actions, a)
		return nil
	})
	return actions, err
}

// readCommitInfo reads the commitInfo of commit v (nil if it has none), decoding nothing else
// it does not need to.
func (t *Table) readCommitInfo(ctx context.Context, v Version) (*CommitInfo, error) {
	var ci *CommitInfo
	err := readLogFile(ctx, t.store, CommitKey(v), readOptions{commitInfo: true}, func(a *Action) error {
		if a.CommitInfo != nil {
			ci = a.CommitInfo
		}
		return nil
	})
	return ci, err
}

// serialize renders the commit for state: commitInfo first (required with in-commit timestamps),
// then protocol, metadata, txns, domains, removes and adds, one JSON object per line.
func (tx *Transaction) serialize(state commitState, rows *rowIDAssignment) ([]byte, error) {
	now := tx.table.clock.Now().UnixMilli()
	md := tx.metadata()
	props := TableProperties(md.Configuration)
	// The actions are encoded as they come, without a slice of them: a rewrite of a million files
	// would hold a million more Actions and grow a buffer of 270 MB by doubling.
	var buf chunkedBuffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	put := func(a Action) error {
		if err := enc.Encode(&a); err != nil {
			return fmt.Errorf("table %s: encode commit: %w", tx.table.Location(), err)
		}
		return nil
	}

	ci := tx.commitInfo(now)
	if props.InCommitTimestampsEnabled() {
		ict := now
		if state.prevICT != nil && *state.prevICT+1 > ict {
			ict = *state.prevICT + 1
		}
		ci.InCommitTimestamp = &ict
		if tx.newMetadata != nil && !TableProperties(tx.snap.metadata.Configuration).InCommitTimestampsEnabled() {
			// Enabling ICT on an existing table records where it starts (PROTOCOL.md §In-Commit Timestamps).
			md.Configuration[PropICTEnablementVersion] = state.version.String()
			md.Configuration[PropICTEnablementTimestamp] = itoa(ict)
		}
	}
	if err := put(Action{CommitInfo: ci}); err != nil {
		return nil, err
	}
	if tx.newProtocol != nil {
		if err := put(Action{Protocol: tx.newProtocol}); err != nil {
			return nil, err
		}
	}
	if tx.newMetadata != nil {
		if err := put(Action{MetaData: tx.newMetadata}); err != nil {
			return nil, err
		}
	}
	for _, id := range sortedKeys(tx.txns) {
		if err := put(Action{Txn: tx.txns[id]}); err != nil {
			return nil, err
		}
	}
	domains := make(map[string]*DomainMetadata, len(tx.domains)+1)
	for k, v := range tx.domains {
		domains[k] = v
	}
	if rows != nil {
		if hwm := rows.apply(state.hwm, state.version); hwm != state.hwm || len(rows.assigned) > 0 {
			domains[DomainRowTracking] = &DomainMetadata{Domain: DomainRowTracking, Configuration: highWaterMarkConfig(hwm)}
		}
	}
	for _, d := range sortedKeys(domains) {
		if err := put(Action{DomainMetadata: domains[d]}); err != nil {
			return nil, err
		}
	}
	for _, r := range tx.removes {
		if err := put(Action{Remove: r}); err != nil {
			return nil, err
		}
	}
	for _, a := range tx.adds {
		if err := put(Action{Add: a}); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// commitInfo builds a truthful commitInfo: isBlindAppend only when the commit adds files and
// depends on nothing it read (Spark's definition), Spark-named metrics when the caller set none.
func (tx *Transaction) commitInfo(now int64) *CommitInfo {
	blind := len(tx.removes) == 0 && len(tx.readFiles) == 0 && len(tx.readPredicates) == 0 && !tx.readWholeTable &&
		tx.newMetadata == nil && tx.newProtocol == nil && len(tx.adds) > 0
	metrics := make(map[string]string, len(tx.metrics)+5)
	var addedBytes, removedBytes, outputRows int64
	rowsKnown := true
	for _, a := range tx.adds {
		addedBytes += a.Size
		if n, ok := NumRecords(a.Stats); ok {
			outputRows += n
		} else {
			rowsKnown = false
		}
	}
	for _, r := range tx.removes {
		if r.Size != nil {
			removedBytes += *r.Size
		}
	}
	if len(tx.adds) > 0 || len(tx.removes) > 0 {
		metrics["numAddedFiles"] = itoa(int64(len(tx.adds)))
		metrics["numRemovedFiles"] = itoa(int64(len(tx.removes)))
		metrics["numAddedBytes"] = itoa(addedBytes)
		metrics["numRemovedBytes"] = itoa(removedBytes)
		if rowsKnown && len(tx.adds) > 0 {
			metrics["numOutputRows"] = itoa(outputRows)
		}
	}
	for k, v := range tx.metrics {
		metrics[k] = v
	}
	ci := &CommitInfo{
		Timestamp:           &now,
		Operation:           tx.opts.Operation,
		OperationParameters: tx.opts.OperationParameters,
		ReadVersion:         ptr(int64(tx.snap.version)),
		IsolationLevel:      tx.isolation,
		IsBlindAppend:       &blind,
		OperationMetrics:    metrics,
		EngineInfo:          version.EngineInfo(),
		TxnID:               tx.txnID,
	}
	if tx.snap.version == NoVersion {
		ci.ReadVersion = nil
	}
	if len(tx.tags) > 0 {
		ci.Tags = tx.tags
	}
	if ci.OperationParameters == nil {
		ci.OperationParameters = map[string]string{}
	}
	return ci
}

// postCommit writes a checkpoint every delta.checkpointInterval versions, as Spark does
// (version % interval == 0). Its failure does not fail the commit.
func (tx *Transaction) postCommit(ctx context.Context, res *CommitResult) {
	if tx.opts.NoAutoCheckpoint || res.Version == 0 {
		return
	}
	interval, err := TableProperties(tx.metadata().Configuration).CheckpointInterval()
	if err != nil || int64(res.Version)%interval != 0 {
		return
	}
	snap, err := tx.table.At(ctx, res.Version)
	if err == nil {
		err = tx.table.Checkpoint(ctx, snap)
	}
	res.CheckpointErr = err
	res.Checkpointed = err == nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
