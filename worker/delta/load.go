package delta

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ErrIncompleteLog is matched by errors for logs lacking a protocol or metadata action.
var ErrIncompleteLog = errors.New("delta log has no protocol or metadata")

// Latest loads the snapshot of the newest version.
func (t *Table) Latest(ctx context.Context) (*Snapshot, error) {
	return t.load(ctx, NoVersion, loadConfig{})
}

// At loads the snapshot of version v (time travel).
func (t *Table) At(ctx context.Context, v Version) (*Snapshot, error) {
	if v < 0 {
		return nil, fmt.Errorf("table %s: version %d is negative", t.Location(), v)
	}
	return t.load(ctx, v, loadConfig{})
}

// TableState is a table's protocol, metadata and commit time at one version, without its files.
type TableState struct {
	Version           Version
	Protocol          Protocol
	Metadata          Metadata
	Properties        TableProperties
	Timestamp         time.Time
	InCommitTimestamp *int64
	// Clustered is true when the table has clustering columns (or its clustering domain does not
	// parse): commands choose by it how to load the files (LoadOptions) before loading them.
	Clustered bool
}

// State loads the protocol, metadata and timestamp of version v (NoVersion = latest) without
// reading any file actions: for a million-file table it reads the checkpoint's small columns only.
func (t *Table) State(ctx context.Context, v Version) (*TableState, error) {
	s, err := t.load(ctx, v, loadConfig{metadataOnly: true})
	if err != nil {
		return nil, err
	}
	cols, clustered, cerr := s.ClusteringColumns()
	return &TableState{Version: s.version, Protocol: s.protocol, Metadata: s.metadata, Properties: s.props, Timestamp: s.timestamp,
		InCommitTimestamp: s.ict, Clustered: cerr != nil || clustered && len(cols) > 0}, nil
}

// vanishedLogRetries bounds how often load lists the log again after a file it listed could not be
// opened.
var vanishedLogRetries = []time.Duration{50 * time.Millisecond, 250 * time.Millisecond, time.Second}

// load builds the snapshot of target. A log file that the listing showed but that is gone when it is
// opened is not yet corruption: a concurrent log cleanup may have deleted it after writing a newer
// checkpoint, and a store may briefly list an object it cannot serve yet. The log is listed again (a
// few times, with pauses) and only a file that stays listed and missing fails the load, as corruption.
func (t *Table) load(ctx context.Context, target Version, cfg loadConfig) (*Snapshot, error) {
	for attempt := 0; ; attempt++ {
		snap, err := t.loadOnce(ctx, target, cfg)
		if err == nil || !errors.Is(err, storage.ErrNotFound) || attempt >= len(vanishedLogRetries) || ctx.Err() != nil {
			return snap, err
		}
		if serr := sleepCtx(ctx, vanishedLogRetries[attempt]); serr != nil {
			return nil, err
		}
	}
}

func (t *Table) loadOnce(ctx context.Context, target Version, cfg loadConfig) (*Snapshot, error) {
	l, full, err := t.listForTarget(ctx, target)
	if err != nil {
		return nil, err
	}
	below := NoVersion
	relisted := false
	for {
		seg, err := buildSegment(t.Location(), l, target, below)
		var notFound *VersionNotFoundError
		if errors.As(err, &notFound) && (!full || l.truncated) {
			// The listing was partial (from a hint, or cut at the target); list everything, and
			// build from that listing when it shows the target recoverable (a checkpoint or log
			// cleanup running while the partial listing was taken can leave it inconsistent);
			// otherwise the error names the real earliest and latest versions.
			all, lerr := listLog(ctx, t.store, "", NoVersion)
			if lerr != nil {
				return nil, lerr
			}
			earliest := all.earliestRecoverable()
			if relisted || earliest == NoVersion || target != NoVersion && (target < earliest || target > all.maxVersion) {
				return nil, &VersionNotFoundError{Table: t.Location(), Requested: target, Earliest: earliest, Latest: all.maxVersion}
			}
			l, full, relisted = all, true, true
			continue
		}
		if err != nil {
			return nil, err
		}
		snap, err := t.replay(ctx, seg, cfg)
		if err == nil {
			return snap, nil
		}
		var cpErr *checkpointReadError
		if !errors.As(err, &cpErr) || ctx.Err() != nil {
			return nil, err
		}
		// A corrupt checkpoint: fall back to an older one (or to commit 0) if the commits after
		// it are still there, as Spark does; otherwise report the checkpoint error.
		if !full {
			if l, err = listLog(ctx, t.store, "", target); err != nil {
				return nil, err
			}
			full = true
		}
		below = cpErr.version
		if _, parts := l.newestCheckpoint(maxVersion(target, l.maxVersion), below); parts == nil {
			if _, ok := l.commits[0]; !ok {
				return nil, cpErr
			}
		}
	}
}

func maxVersion(target, latest Version) Version {
	if target == NoVersion {
		return latest
	}
	return target
}

// listForTarget lists the log, starting at the _last_checkpoint hint when it can help; full
// reports whether the listing started at the beginning of the log.
func (t *Table) listForTarget(ctx context.Context, target Version) (*listing, bool, error) {
	hint, ok, err := readLastCheckpoint(ctx, t.store)
	if err != nil {
		return nil, false, err
	}
	if ok && (target == NoVersion || hint.Version <= target) {
		l, err := listLog(ctx, t.store, versionPrefix(hint.Version), target)
		if err != nil {
			return nil, false, err
		}
		// The hint is trusted only if the checkpoint it names is really there and complete.
		if v, _ := l.newestCheckpoint(maxVersion(target, l.maxVersion), NoVersion); v >= hint.Version {
			return l, false, nil
		}
	}
	l, err := listLog(ctx, t.store, "", target)
	return l, true, err
}

// checkpointReadError marks a failure to read a checkpoint, which load may recover from.
type checkpointReadError struct {
	table   string
	version Version
	err     error
}

func (e *checkpointReadError) Error() string {
	return fmt.Sprintf("table %s: read checkpoint %d: %v", e.table, e.version, e.err)
}
func (e *checkpointReadError) Unwrap() error { return e.err }

// replay reconstructs the snapshot of a segment.
func (t *Table) replay(ctx context.Context, seg *logSegment, cfg loadConfig) (*Snapshot, error) {
	st := newReplayState()
	st.metadataOnly = cfg.metadataOnly
	st.rowCountsOnly = cfg.rowCountsOnly
	// The commits after the checkpoint are parsed while the checkpoint is decoded; they are
	// applied after it, in order.
	commits := startCommitReader(ctx, t.store, seg.deltas, seg.version)
	defer commits.stop()
	if len(seg.checkpoint) > 0 {
		if err := t.readCheckpoint(ctx, seg, st); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, &checkpointReadError{table: t.Location(), version: seg.cpVersion, err: err}
		}
		if st.protocol == nil || st.metadata == nil {
			// Every checkpoint holds the protocol and the metadata (PROTOCOL.md §Checkpoints): a
			// Parquet file without them is not a checkpoint of this table, whatever its name.
			return nil, &checkpointReadError{table: t.Location(), version: seg.cpVersion,
				err: fmt.Errorf("checkpoint %s has no protocol or metaData row: %w", seg.checkpoint[0].Key, ErrCorruptTable)}
		}
		st.metadataSource = seg.checkpoint[0].Key
	}
	var commitInfo *CommitInfo
	for i, f := range seg.deltas {
		isTarget := f.kind == kindCommit && f.version == seg.version
		actions, err := commits.next(i)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Location(), err)
		}
		if f.kind == kindCompaction {
			if err := checkReconciled(t.Location(), f, actions); err != nil {
				return nil, err
			}
		} else if err := checkDuplicateFileActions(t.Location(), f, actions); err != nil {
			return nil, err
		}
		for _, a := range actions {
			if a.CommitInfo != nil {
				if isTarget {
					commitInfo = a.CommitInfo
				}
				continue
			}
			if a.Sidecar != nil || a.CheckpointMetadata != nil {
				continue // only allowed in checkpoints; ignore rather than misapply
			}
			if a.MetaData != nil {
				st.metadataSource = f.Key
			}
			st.apply(a)
		}
		commits.done(i)
	}
	if commitInfo == nil && seg.latestCommit != nil && (len(seg.deltas) == 0 || seg.deltas[len(seg.deltas)-1].version != seg.version) {
		// The checkpoint is at the snapshot version: its commit still carries the commitInfo.
		err := readJSONActions(ctx, t.store, seg.latestCommit.Key, func(a *Action) error {
			if a.CommitInfo != nil {
				commitInfo = a.CommitInfo
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", t.Location(), err)
		}
	}
	return t.finish(seg, st, commitInfo)
}

// readCheckpoint loads a checkpoint: non-file actions first, so that the metadata can tell
// whether statistics are stored as JSON or only as stats_parsed, then the file actions, inline
// or from sidecars.
func (t *Table) readCheckpoint(ctx context.Context, seg *logSegment, st *replayState) error {
	for _, part := range seg.checkpoint {
		if part.Size == 0 {
			// Never a checkpoint: an interrupted or broken write.
			return fmt.Errorf("checkpoint file %s is empty (0 bytes): %w", part.Key, ErrCorruptTable)
		}
	}
	first := seg.checkpoint[0]
	if first.format == "json" {
		if err := readJSONActions(ctx, t.store, first.Key, func(a *Action) error { st.apply(a); return nil }); err != nil {
			return err
		}
		if st.metadataOnly {
			return nil
		}
		return t.readSidecars(ctx, seg, st, 0)
	}
	// Both passes read every part: open each once.
	parts := make([]*ckSource, 0, len(seg.checkpoint))
	defer func() {
		for _, p := range parts {
			p.f.Close()
		}
	}()
	var rows int64
	statsParsed := false
	for _, part := range seg.checkpoint {
		f, err := openCheckpointFile(ctx, t.store, part.Key)
		if err != nil {
			return err
		}
		parts = append(parts, &ckSource{f: f})
		rows += f.pf.NumRows()
		statsParsed = statsParsed || f.hasStatsParsed()
	}
	tasks := wholeFileTasks(parts, parquetReadRequest{columns: nonFileColumns})
	if st.metadataOnly {
		return runCkTasks(ctx, tasks, st)
	}
	st.reserve(int(rows))
	if statsParsed {
		// Whether stats_parsed is read depends on the metadata: read that first.
		if err := runCkTasks(ctx, tasks, st); err != nil {
			return err
		}
		tasks = tasks[:0]
	}
	// Without stats_parsed in the parts their file actions do not depend on the metadata: they
	// are decoded alongside it, and applied after it.
	req := parquetReadRequest{columns: fileColumns, statsParsed: statsParsed && st.needsStatsParsed()}
	tasks = append(tasks, rangeTasks(parts, req, taskRows(rows))...)
	if err := runCkTasks(ctx, tasks, st); err != nil {
		return err
	}
	return t.readSidecars(ctx, seg, st, rows)
}

// readSidecars reads the add and remove actions of the sidecars the checkpoint lists, in order,
// and checks the checkpoint's declared version. partRows is how many rows the parts had.
func (t *Table) readSidecars(ctx context.Context, seg *logSegment, st *replayState, partRows int64) error {
	sources := make([]*ckSource, 0, len(st.sidecars))
	defer func() {
		for _, s := range sources {
			s.f.Close()
		}
	}()
	var rows int64
	for _, sc := range st.sidecars {
		key, err := sidecarKey(t.Location(), sc.Path)
		if err != nil {
			return err
		}
		f, err := openCheckpointFile(ctx, t.store, key)
		if err != nil {
			return fmt.Errorf("sidecar %s: %w", sc.Path, err)
		}
		sources = append(sources, &ckSource{f: f, sidecar: sc.Path})
		rows += f.pf.NumRows()
	}
	if len(sources) > 0 {
		st.reserve(int(rows + partRows))
		req := parquetReadRequest{columns: fileColumns, statsParsed: st.needsStatsParsed()}
		tasks := rangeTasks(sources, req, taskRows(rows))
		if err := runCkTasks(ctx, tasks, st); err != nil {
			return err
		}
	}
	if st.cpMeta != nil && Version(st.cpMeta.Version) != seg.cpVersion {
		return fmt.Errorf("checkpoint %s declares version %d", seg.checkpoint[0].Key, st.cpMeta.Version)
	}
	return nil
}

// needsStatsParsed: statistics are only in stats_parsed when the table turned JSON stats off.
func (s *replayState) needsStatsParsed() bool {
	if s.metadata == nil {
		return true
	}
	asJSON, err := TableProperties(s.metadata.Configuration).WriteStatsAsJSON()
	return err != nil || !asJSON
}

// sidecarKey resolves a sidecar path: a bare (URL-encoded) name relative to _delta_log/_sidecars/
// or an absolute URI under the table.
func sidecarKey(tableLocation, p string) (string, error) {
	if isAbsoluteURI(p) {
		return ObjectKey(tableLocation, p)
	}
	key, err := ObjectKey(tableLocation, p)
	if err != nil {
		return "", fmt.Errorf("sidecar path %q: %w", p, err)
	}
	return SidecarDir + key, nil
}

// finish validates the reconciled state and builds the Snapshot.
func (t *Table) finish(seg *logSegment, st *replayState, ci *CommitInfo) (*Snapshot, error) {
	loc := t.Location()
	if st.protocol == nil || st.metadata == nil {
		missing := "protocol"
		if st.protocol != nil {
			missing = "metadata"
		}
		return nil, fmt.Errorf("table %s at version %d: the log has no %s action: %w", loc, seg.version, missing, ErrIncompleteLog)
	}
	if err := checkLogReadable(loc, st.protocol); err != nil {
		return nil, err
	}
	schema, err := validateMetadata(loc, seg.version, st.metadata, st.metadataSource)
	if err != nil {
		return nil, err
	}
	props := TableProperties(st.metadata.Configuration)
	if props == nil {
		props = TableProperties{}
	}
	mode, err := props.ColumnMappingMode()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", loc, err)
	}
	if err := validateColumnMapping(schema, mode, ""); err != nil {
		return nil, fmt.Errorf("table %s: %w", loc, err)
	}
	files := st.liveFiles() // compacts the index's positions too: before st.files is taken
	s := &Snapshot{
		table: t, version: seg.version, protocol: *st.protocol, metadata: *st.metadata,
		schema: schema, props: props, mode: mode, segment: seg, commitInfo: ci, rowCountsOnly: st.rowCountsOnly,
		files: files, tombstones: st.liveTombstones(), byKey: st.files,
		txns: make(map[string]SetTransaction, len(st.txns)), domains: make(map[string]DomainMetadata, len(st.domains)),
	}
	for k, v := range st.txns {
		s.txns[k] = *v
	}
	for k, v := range st.domains {
		s.domains[k] = *v
	}
	if !st.metadataOnly {
		if s.writeViolation, err = checkFilePaths(loc, seg.version, s.files, s.tombstones); err != nil {
			return nil, err
		}
		if err := checkLiveFiles(loc, seg.version, s.files); err != nil {
			return nil, err
		}
	}
	s.totalBytes = st.liveBytes
	if st.sawDV {
		// Only tables with deletion vectors pay for a pass over every file.
		for _, f := range s.files {
			if f.DeletionVector != nil {
				if s.dvByPath == nil {
					s.dvByPath = map[string]string{}
				}
				s.dvByPath[f.Path] = f.DeletionVector.UniqueID()
			}
		}
	}
	if err := s.resolveTimestamp(); err != nil {
		return nil, err
	}
	return s, nil
}

// resolveTimestamp sets the snapshot's commit time: the in-commit timestamp for versions at or
// after ICT enablement (required there), otherwise the commit file's modification time (the
// checkpoint's when the commit file is gone).
func (s *Snapshot) resolveTimestamp() error {
	if s.commitInfo != nil && s.commitInfo.InCommitTimestamp != nil {
		s.ict = s.commitInfo.InCommitTimestamp
	}
	if s.props.InCommitTimestampsEnabled() {
		enabledAt, _, hasEnablement, err := s.props.ICTEnablement()
		if err != nil {
			return fmt.Errorf("table %s: %w", s.table.Location(), err)
		}
		if (!hasEnablement || s.version >= enabledAt) && s.ict == nil && s.segment.latestCommit != nil {
			return fmt.Errorf("table %s: in-commit timestamps are enabled but commit %d has no commitInfo.inCommitTimestamp; the commit was not written by a compliant writer", s.table.Location(), s.version)
		}
	}
	switch {
	case s.ict != nil:
		s.timestamp = time.UnixMilli(*s.ict).UTC()
	case s.segment.latestCommit != nil:
		s.timestamp = s.segment.latestCommit.ModTime
	case len(s.segment.checkpoint) > 0:
		s.timestamp = s.segment.checkpoint[0].ModTime
	}
	return nil
}

// checkLogReadable refuses tables whose log itself deltakeeper cannot interpret: an unknown
// reader version, an unknown reader feature (it may change how the log is read, as v2Checkpoint
// did), or a catalog/coordinator owning the commits. Operation-specific refusals are
// CheckProtocol's job.
func checkLogReadable(table string, p *Protocol) error {
	refuse := func(feature, reason, hint string) error {
		return &UnsupportedError{Table: table, Operation: OpRead, Feature: feature, Reason: reason, Hint: hint}
	}
	if p.MinReaderVersion < 1 || p.MinReaderVersion > maxReaderVersion {
		return refuse("", fmt.Sprintf("reader version %d is not one deltakeeper understands (1-%d)", p.MinReaderVersion, maxReaderVersion), "upgrade deltakeeper")
	}
	for _, f := range p.ReaderFeatureSet() {
		if _, known := featureRules[f]; !known {
			return refuse(f, "deltakeeper does not know this reader feature, so it cannot interpret the log", "upgrade deltakeeper")
		}
		switch f {
		case FeatureCatalogManaged, FeatureCatalogOwnedPreview, FeatureCoordinatedCommits, FeatureRedirectReaderWriter:
			reason, hint := featureRules[f](gateInput{op: OpRead})
			return refuse(f, reason, hint)
		}
	}
	for _, f := range p.WriterFeatureSet() {
		if f == FeatureCoordinatedCommits {
			// Without the coordinator the newest commits are not in _delta_log yet.
			reason, hint := featureRules[f](gateInput{op: OpRead})
			return refuse(f, reason, hint)
		}
	}
	return nil
}
