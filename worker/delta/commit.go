package delta

import (
	"bytes"
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
		err = tx.table.store.PutIfAbsent(ctx, CommitKey(state.version), data)
		if err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
			// The outcome of a failed conditional write can be unknown (a timeout after the
			// object was created): look before deciding.
			mine, lerr := tx.isMine(ctx, state.version)
			switch {
			case lerr == nil && mine:
				err = nil
			case lerr == nil:
				err = storage.ErrAlreadyExists // someone else's commit is there: a lost race
			case errors.Is(lerr, storage.ErrNotFound):
				// Nothing landed: a plain failure the caller may retry with a new transaction.
				return nil, fmt.Errorf("table %s: write commit %d: %w", tx.table.Location(), state.version, err)
			default:
				return nil, &CommitOutcomeUnknownError{Table: tx.table.Location(), TxnID: tx.txnID, Version: state.version, Err: err}
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

// CommitOutcomeUnknownError means the conditional write of a commit failed in a way that leaves
// open whether it landed (a timeout, and the log could not be read back). Retrying blindly could
// commit the same data twice: look the transaction up with Table.FindCommit first.
type CommitOutcomeUnknownError struct {
	Table   string
	TxnID   string
	Version Version
	Err     error
}

func (e *CommitOutcomeUnknownError) Error() string {
	return fmt.Sprintf("table %s: commit %d (txnId %s) may or may not have been written: %v; check with FindCommit before retrying",
		e.Table, e.Version, e.TxnID, e.Err)
}

func (e *CommitOutcomeUnknownError) Unwrap() []error { return []error{ErrCommitOutcomeUnknown, e.Err} }

// FindCommit looks for the commit of a transaction (by commitInfo.txnId) in versions from on,
// for callers recovering from a CommitOutcomeUnknownError.
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

// isMine reports whether commit v exists and carries this transaction's id.
func (tx *Transaction) isMine(ctx context.Context, v Version) (bool, error) {
	ci, err := tx.table.readCommitInfo(ctx, v)
	if err != nil {
		return false, err
	}
	return ci != nil && ci.TxnID == tx.txnID, nil
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
	var actions []Action

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
	actions = append(actions, Action{CommitInfo: ci})
	if tx.newProtocol != nil {
		actions = append(actions, Action{Protocol: tx.newProtocol})
	}
	if tx.newMetadata != nil {
		actions = append(actions, Action{MetaData: tx.newMetadata})
	}
	for _, id := range sortedKeys(tx.txns) {
		actions = append(actions, Action{Txn: tx.txns[id]})
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
		actions = append(actions, Action{DomainMetadata: domains[d]})
	}
	for _, r := range tx.removes {
		actions = append(actions, Action{Remove: r})
	}
	for _, a := range tx.adds {
		actions = append(actions, Action{Add: a})
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for i := range actions {
		if err := enc.Encode(&actions[i]); err != nil {
			return nil, fmt.Errorf("table %s: encode commit: %w", tx.table.Location(), err)
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
