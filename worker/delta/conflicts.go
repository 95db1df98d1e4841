package delta

import (
	"errors"
	"fmt"
)

// ErrConcurrentModification is matched by every conflict with a concurrent commit; the kind
// sentinels below tell which rule fired (Spark's ConflictChecker exceptions, same order).
var (
	ErrConcurrentModification = errors.New("concurrent modification")
	ErrProtocolChanged        = errors.New("the protocol changed concurrently")
	ErrMetadataChanged        = errors.New("the metadata changed concurrently")
	ErrConcurrentTransaction  = errors.New("a concurrent transaction touched the same domain or application id")
	ErrConcurrentAppend       = errors.New("files were added concurrently to data this transaction read")
	ErrConcurrentDeleteRead   = errors.New("a file this transaction read was removed concurrently")
	ErrConcurrentDeleteDelete = errors.New("a file this transaction removes was removed concurrently")
	// ErrCommitRetriesExhausted means every attempt lost the race to compatible commits.
	ErrCommitRetriesExhausted = errors.New("commit retries exhausted")
)

// ConflictError describes the winning commit that made this transaction's commit impossible.
type ConflictError struct {
	Table         string
	Kind          error   // one of the Err* kind sentinels
	ReadVersion   Version // the snapshot the transaction was built on
	WinnerVersion Version
	WinnerOp      string // the winner's commitInfo.operation, if any
	Detail        string // which file, domain or application id
}

func (e *ConflictError) Error() string {
	op := ""
	if e.WinnerOp != "" {
		op = " (" + e.WinnerOp + ")"
	}
	return fmt.Sprintf("table %s: commit %d%s conflicts with this transaction (read version %d): %v: %s; start again from a fresh snapshot",
		e.Table, e.WinnerVersion, op, e.ReadVersion, e.Kind, e.Detail)
}

// Is matches the kind sentinel and ErrConcurrentModification.
func (e *ConflictError) Is(target error) bool {
	return target == ErrConcurrentModification || target == e.Kind
}

// winnerSummary is what the conflict rules need from one winning commit.
type winnerSummary struct {
	version     Version
	commitInfo  *CommitInfo
	protocol    *Protocol
	metadata    *Metadata
	adds        []*AddFile
	removes     []*RemoveFile
	txnAppIDs   map[string]bool
	domains     map[string]*DomainMetadata
	blindAppend bool
}

func summarize(v Version, actions []*Action) *winnerSummary {
	w := &winnerSummary{version: v, txnAppIDs: map[string]bool{}, domains: map[string]*DomainMetadata{}}
	for _, a := range actions {
		switch {
		case a.CommitInfo != nil:
			w.commitInfo = a.CommitInfo
		case a.Protocol != nil:
			w.protocol = a.Protocol
		case a.MetaData != nil:
			w.metadata = a.MetaData
		case a.Add != nil:
			w.adds = append(w.adds, a.Add)
		case a.Remove != nil:
			w.removes = append(w.removes, a.Remove)
		case a.Txn != nil:
			w.txnAppIDs[a.Txn.AppID] = true
		case a.DomainMetadata != nil:
			w.domains[a.DomainMetadata.Domain] = a.DomainMetadata
		}
	}
	// Whether adds count as blind appends depends only on the winner's own declaration.
	w.blindAppend = w.commitInfo.BlindAppend()
	return w
}

// checkConflict applies the rules of Spark's ConflictChecker in order. It returns nil when the
// winner is compatible and the transaction may rebase onto it.
func (tx *Transaction) checkConflict(w *winnerSummary) error {
	conflict := func(kind error, detail string, args ...any) error {
		e := &ConflictError{Table: tx.table.Location(), Kind: kind, ReadVersion: tx.snap.version, WinnerVersion: w.version, Detail: fmt.Sprintf(detail, args...)}
		if w.commitInfo != nil {
			e.WinnerOp = w.commitInfo.Operation
		}
		return e
	}
	// 1-2. Protocol and metadata changes invalidate everything this transaction derived.
	if w.protocol != nil {
		return conflict(ErrProtocolChanged, "the winner wrote protocol %d/%d", w.protocol.MinReaderVersion, w.protocol.MinWriterVersion)
	}
	if w.metadata != nil {
		return conflict(ErrMetadataChanged, "the winner changed the table metadata")
	}
	// 3. Domains: the same domain written on both sides, or one this transaction read. The
	// row-tracking high-water mark is merged instead (reassigned on rebase).
	for d := range w.domains {
		if d == DomainRowTracking {
			continue
		}
		if _, ok := tx.domains[d]; ok {
			return conflict(ErrConcurrentTransaction, "both transactions wrote domain %q", d)
		}
		if tx.readDomains[d] {
			return conflict(ErrConcurrentTransaction, "the winner changed domain %q, which this transaction read", d)
		}
	}
	// 4. Application ids whose txn version this transaction depends on.
	for id := range w.txnAppIDs {
		if tx.readAppIDs[id] {
			return conflict(ErrConcurrentTransaction, "the winner committed a txn action for application %q", id)
		}
	}
	// 6. Added files this transaction should have read. Under WriteSerializable (the default)
	// blind appends never conflict; under Serializable they do. A MERGE's key predicate
	// (ReadKeysWhere) is the exception: conflicts_merge.go.
	if err := tx.checkKeyPredicates(w, conflict); err != nil {
		return err
	}
	// Only adds that change data count (Spark's changedDataAddedFiles): a compaction's dataChange=false
	// adds hold rows the same commit removed, and rule 7 judges those removes.
	if !w.blindAppend || tx.isolation == "Serializable" {
		for _, a := range w.adds {
			if !a.DataChange {
				continue
			}
			if tx.readWholeTable {
				return conflict(ErrConcurrentAppend, "the winner added %s and this transaction read the whole table", a.Path)
			}
			for _, p := range tx.readPredicates {
				if p.match(a) {
					return conflict(ErrConcurrentAppend, "the winner added %s, which matches %s", a.Path, p.description)
				}
			}
		}
	}
	// 7. Removed files this transaction read (Spark semantics: dataChange=false removes of a
	// compaction count too, since the file this transaction relies on is gone either way).
	for _, r := range w.removes {
		// A file both sides remove is reported by rule 8, the more precise message.
		if tx.readFiles[r.Path] && !tx.removedPaths[r.Path] {
			return conflict(ErrConcurrentDeleteRead, "the winner removed %s, which this transaction read", r.Path)
		}
	}
	if tx.readWholeTable && len(w.removes) > 0 {
		return conflict(ErrConcurrentDeleteRead, "the winner removed %s and this transaction read the whole table", w.removes[0].Path)
	}
	// 8. Both remove the same file (e.g. two compactions of the same input).
	for _, r := range w.removes {
		if tx.removedPaths[r.Path] {
			return conflict(ErrConcurrentDeleteDelete, "both transactions removed %s", r.Path)
		}
	}
	return nil
}

// ReadPredicate is a tracked read: "this transaction's result depends on every file matching".
type readPredicate struct {
	description string
	match       func(*AddFile) bool
	// evenBlind makes blind appends matching the predicate conflict under WriteSerializable too.
	evenBlind bool
}
