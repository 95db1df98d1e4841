package delta

// A MERGE decides "insert" for every source row whose key it found in no target file. A concurrent
// append of a file holding one of those keys invalidates that decision even when the append is
// blind: committed on top of it, the merge would leave the appended row and its own inserted row
// side by side — a duplicate key an upsert exists to prevent. Spark treats blind appends as
// compatible under WriteSerializable (its MERGE reads the whole target and accepts the anomaly);
// deltakeeper's MERGE declares its key predicate with ReadKeysWhere, which conflicts with any
// concurrent add that might hold a source key, blind or not.

// ReadKeysWhere records the predicate of a keyed read: like ReadWhere, and in addition a concurrent
// blind append adding a matching file conflicts under every isolation level. match must be true
// for every file that might hold one of the keys (a file without statistics, say). It returns the
// snapshot's matching files.
func (tx *Transaction) ReadKeysWhere(description string, match func(*AddFile) bool) []*AddFile {
	out := tx.ReadWhere(description, match)
	tx.readPredicates[len(tx.readPredicates)-1].evenBlind = true
	return out
}

// checkKeyPredicates is rule 6 for ReadKeysWhere's predicates, applied to every winner's adds
// (rule 6 proper skips blind appends under WriteSerializable).
func (tx *Transaction) checkKeyPredicates(w *winnerSummary, conflict func(kind error, detail string, args ...any) error) error {
	for _, p := range tx.readPredicates {
		if !p.evenBlind {
			continue
		}
		for _, a := range w.adds {
			if a.DataChange && p.match(a) {
				return conflict(ErrConcurrentAppend, "the winner added %s, which may hold a key of %s", a.Path, p.description)
			}
		}
	}
	return nil
}
