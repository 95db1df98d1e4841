package delta

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
)

// TxnOptions describe a transaction's commit.
type TxnOptions struct {
	// Operation is commitInfo.operation, in Spark's vocabulary where one applies ("OPTIMIZE",
	// "WRITE", "STREAMING UPDATE", "MERGE", "VACUUM START", "SET TBLPROPERTIES").
	Operation string
	// OperationParameters are recorded in commitInfo (values are strings, as Spark writes them).
	OperationParameters map[string]string
	// Retry bounds how often a commit is retried after losing the race to a compatible commit.
	Retry RetryPolicy
	// RowTrackingPreserved declares that a rewrite copied every row's stable row id and row commit
	// version into the materialized columns (delta.rowTracking.materialized*ColumnName). Required
	// for rewrites of tables with row tracking enabled.
	RowTrackingPreserved bool
	// NoAutoCheckpoint skips the post-commit checkpoint every delta.checkpointInterval commits.
	NoAutoCheckpoint bool
}

// Transaction collects the actions of one commit and what the commit depends on (its read set),
// then commits them atomically, resolving races with concurrent writers by the protocol's
// conflict rules. It is the only way deltakeeper writes to _delta_log. Not safe for concurrent
// use; one transaction commits at most once.
type Transaction struct {
	table     *Table
	snap      *Snapshot
	kind      Operation
	opts      TxnOptions
	txnID     string
	isolation string
	// written are the versions an attempt of Commit sent a write for: a commit found there may be its own.
	written map[Version]bool

	readFiles      map[string]bool
	readPredicates []readPredicate
	readWholeTable bool
	readAppIDs     map[string]bool
	readDomains    map[string]bool

	adds         []*AddFile
	removes      []*RemoveFile
	removedPaths map[string]bool
	txns         map[string]*SetTransaction
	domains      map[string]*DomainMetadata
	newMetadata  *Metadata
	newProtocol  *Protocol
	metrics      map[string]string
	tags         map[string]string
	committed    bool
	// rowTrackingPreserved: the DML's rewritten files carry their rows' ids (MarkRowTrackingPreserved).
	rowTrackingPreserved bool
}

// Begin starts a transaction on this snapshot after checking, through the table-features gate,
// that deltakeeper may perform kind on the table.
func (s *Snapshot) Begin(kind Operation, opts TxnOptions) (*Transaction, error) {
	if err := s.CheckOperation(kind); err != nil {
		return nil, err
	}
	if opts.Operation == "" {
		return nil, fmt.Errorf("table %s: transaction needs an operation name for commitInfo", s.table.Location())
	}
	return &Transaction{
		table: s.table, snap: s, kind: kind, opts: opts, txnID: uuid.NewString(),
		isolation:    s.props.IsolationLevel(),
		readFiles:    map[string]bool{},
		readAppIDs:   map[string]bool{},
		readDomains:  map[string]bool{},
		removedPaths: map[string]bool{},
		txns:         map[string]*SetTransaction{},
		domains:      map[string]*DomainMetadata{},
		metrics:      map[string]string{},
		tags:         map[string]string{},
	}, nil
}

// Snapshot is the snapshot the transaction reads.
func (tx *Transaction) Snapshot() *Snapshot { return tx.snap }

// TxnID is the transaction's id, recorded as commitInfo.txnId.
func (tx *Transaction) TxnID() string { return tx.txnID }

// ReadFiles records that the result depends on these files: a concurrent commit removing any of
// them conflicts (ConcurrentDeleteRead).
func (tx *Transaction) ReadFiles(files ...*AddFile) {
	for _, f := range files {
		tx.readFiles[f.Path] = true
	}
}

// ReadWhere records a predicate read (a partition filter, say): the snapshot's matching files
// become read files, and a concurrent non-blind-append commit adding a matching file conflicts
// (ConcurrentAppend). It returns the matching files.
func (tx *Transaction) ReadWhere(description string, match func(*AddFile) bool) []*AddFile {
	tx.readPredicates = append(tx.readPredicates, readPredicate{description: description, match: match})
	var out []*AddFile
	for _, f := range tx.snap.files {
		if match(f) {
			out = append(out, f)
			tx.readFiles[f.Path] = true
		}
	}
	return out
}

// ReadWholeTable records that the result depends on the whole table: any concurrent add from a
// non-blind-append commit, and any concurrent remove, conflicts.
func (tx *Transaction) ReadWholeTable() []*AddFile {
	tx.readWholeTable = true
	return tx.snap.files
}

// ReadTxn returns an application's last committed txn version and makes the commit depend on
// it: a concurrent txn action for the same appId conflicts. Idempotent writers call this, skip
// the write if the version was already committed, and otherwise SetTxn.
func (tx *Transaction) ReadTxn(appID string) (SetTransaction, bool) {
	tx.readAppIDs[appID] = true
	return tx.snap.Txn(appID)
}

// ReadDomain returns a domain's metadata and makes the commit depend on it.
func (tx *Transaction) ReadDomain(domain string) (DomainMetadata, bool) {
	tx.readDomains[domain] = true
	return tx.snap.Domain(domain)
}

// Add adds files. Their paths must be EncodePath'd keys and their stats set (BuildStats). The
// transaction keeps copies: row-tracking fields it assigns never leak into the caller's values.
func (tx *Transaction) Add(files ...*AddFile) {
	for _, f := range files {
		c := *f
		tx.adds = append(tx.adds, &c)
	}
}

// Remove retires live files of the snapshot, recording them as read as well. The remove actions
// carry the protocol's extended file metadata; dataChange=false marks a rearrangement (compaction).
func (tx *Transaction) Remove(dataChange bool, files ...*AddFile) {
	now := tx.table.clock.Now().UnixMilli()
	for _, f := range files {
		tx.removes = append(tx.removes, f.Remove(now, dataChange))
		// Not in readFiles as well: a removed file conflicts as removed (ConcurrentDeleteDelete)
		// whether or not it was read, and a million-file rewrite would hold a second map of paths.
		tx.removedPaths[f.Path] = true
	}
}

// RemoveKeepingRowCounts is Remove whose remove actions carry, of each file's statistics, only
// numRecords (statistics are optional in removes, PROTOCOL.md §Add File and Remove File; checkpoints
// and replay drop them from tombstones anyway). The row count stays for the commit's row check. A
// rewrite of a million files writes ~250 MB less of commit JSON, and its commit is the same whether
// the snapshot was loaded in full or with LoadOptions.RowCountsOnly.
func (tx *Transaction) RemoveKeepingRowCounts(dataChange bool, files ...*AddFile) {
	start := len(tx.removes)
	tx.Remove(dataChange, files...)
	if tx.snap.rowCountsOnly {
		return // the files' statistics are their row counts already
	}
	in := newInterner() // equal counts share one string
	for _, r := range tx.removes[start:] {
		r.Stats = rowCountStats(in, r.Stats)
	}
}

// SetTxn records an idempotent-write marker (txn action) for appID; it implies ReadTxn.
func (tx *Transaction) SetTxn(appID string, version int64) {
	tx.readAppIDs[appID] = true
	tx.txns[appID] = &SetTransaction{AppID: appID, Version: version, LastUpdated: ptr(tx.table.clock.Now().UnixMilli())}
}

// SetDomain writes a domain's configuration. System domains ("delta.*") other than the ones
// deltakeeper implements (delta.clustering) are refused: writers may only modify system domains
// they understand. Row tracking's domain is maintained by the transaction itself.
func (tx *Transaction) SetDomain(domain, configuration string) error {
	if err := tx.checkDomainWritable(domain); err != nil {
		return err
	}
	tx.domains[domain] = &DomainMetadata{Domain: domain, Configuration: configuration}
	return nil
}

// RemoveDomain writes a domain tombstone.
func (tx *Transaction) RemoveDomain(domain string) error {
	if err := tx.checkDomainWritable(domain); err != nil {
		return err
	}
	cur, ok := tx.snap.Domain(domain)
	if !ok {
		return fmt.Errorf("table %s has no domain %q to remove", tx.table.Location(), domain)
	}
	tx.domains[domain] = &DomainMetadata{Domain: domain, Configuration: cur.Configuration, Removed: true}
	return nil
}

func (tx *Transaction) checkDomainWritable(domain string) error {
	if len(domain) >= 6 && domain[:6] == "delta." && domain != DomainClustering {
		return fmt.Errorf("table %s: domain %q is a system domain deltakeeper does not maintain", tx.table.Location(), domain)
	}
	if !tx.protocol().HasWriterFeature(FeatureDomainMetadata) {
		return fmt.Errorf("table %s does not support the domainMetadata writer feature; upgrade the protocol first (Transaction.UpgradeProtocol)", tx.table.Location())
	}
	return nil
}

// UpdateMetadata replaces the table metadata (only in OpMetadataChange transactions). The
// schema and partition columns must stay as they are: deltakeeper changes properties, never data
// layout definitions.
func (tx *Transaction) UpdateMetadata(md Metadata) error {
	if tx.kind != OpMetadataChange {
		return fmt.Errorf("table %s: metadata can only change in a %s transaction", tx.table.Location(), OpMetadataChange)
	}
	cur := tx.snap.metadata
	if md.ID != cur.ID || md.SchemaString != cur.SchemaString || !slices.Equal(md.PartitionColumns, cur.PartitionColumns) {
		return fmt.Errorf("table %s: UpdateMetadata may not change the table id, schema or partition columns", tx.table.Location())
	}
	md.Configuration = maps.Clone(md.Configuration)
	tx.newMetadata = &md
	return nil
}

// UpgradeProtocol adds table features (with the versions they need), e.g. clustering plus
// domainMetadata before the first liquid clustering. Only in OpMetadataChange transactions;
// features are never removed, and the result must pass the features gate.
func (tx *Transaction) UpgradeProtocol(features ...string) error {
	if tx.kind != OpMetadataChange {
		return fmt.Errorf("table %s: the protocol can only change in a %s transaction", tx.table.Location(), OpMetadataChange)
	}
	p := tx.protocol().WithFeatures(features...)
	if err := CheckProtocol(tx.table.Location(), &p, tx.metadata(), tx.snap.schema, OpMetadataChange); err != nil {
		return err
	}
	tx.newProtocol = &p
	return nil
}

// SetMetric sets an operationMetrics entry (Spark's names: numAddedFiles, numRemovedFiles, …).
func (tx *Transaction) SetMetric(name string, value int64) { tx.metrics[name] = itoa(value) }

// MarkRowTrackingPreserved declares, in a DML transaction, that the files it rewrote carry every kept
// row's stable row id and commit version in the materialized columns (table.DeleteRows does); the
// commit is then tagged delta.rowTracking.preserved on a table with row tracking enabled.
func (tx *Transaction) MarkRowTrackingPreserved() { tx.rowTrackingPreserved = true }

// SetTag sets a commitInfo tag.
func (tx *Transaction) SetTag(name, value string) { tx.tags[name] = value }

func (tx *Transaction) protocol() *Protocol {
	if tx.newProtocol != nil {
		return tx.newProtocol
	}
	return &tx.snap.protocol
}

func (tx *Transaction) metadata() *Metadata {
	if tx.newMetadata != nil {
		return tx.newMetadata
	}
	return &tx.snap.metadata
}

// RetryPolicy bounds commit retries after compatible conflicts.
type RetryPolicy struct {
	// MaxAttempts is the number of PutIfAbsent attempts (default 15, as delta-rs).
	MaxAttempts int
	// Backoff returns the pause before attempt n (n ≥ 2); default: 10ms doubling, capped at 1s.
	Backoff func(attempt int) time.Duration
}

func (p RetryPolicy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return 15
	}
	return p.MaxAttempts
}

func (p RetryPolicy) backoff(attempt int) time.Duration {
	if p.Backoff != nil {
		return p.Backoff(attempt)
	}
	d := 10 * time.Millisecond << min(attempt-2, 7)
	return min(d, time.Second)
}
