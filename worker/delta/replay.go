package delta

import (
	"hash/maphash"
	"slices"
)

// interner shares repeated strings (partition column names and values) between the files of a
// snapshot. It stops growing at a bound so that high-cardinality values cost no more than
// without it.
type interner struct{ m map[string]string }

const internerLimit = 1 << 18

func newInterner() *interner { return &interner{m: make(map[string]string)} }

func (in *interner) str(s string) string {
	if in == nil {
		return s
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	if len(in.m) < internerLimit {
		in.m[s] = s
	}
	return s
}

func (in *interner) partitionValues(pv PartitionValues) PartitionValues {
	for i := range pv {
		pv[i].Column = in.str(pv[i].Column)
		pv[i].Value = in.str(pv[i].Value)
	}
	return pv
}

// replayState reconciles actions (PROTOCOL.md §Action Reconciliation): the latest protocol and
// metadata win, adds and removes are keyed by (path, DV id) and cancel each other, txns are
// deduplicated by appId and domains by name (a removed domain disappears).
type replayState struct {
	protocol *Protocol
	metadata *Metadata
	// metadataSource is the log file the metaData action came from, for messages.
	metadataSource string
	// Live files and tombstones are kept in log order (checkpoint rows, then commits) with an
	// index from key to position: a deterministic order without sorting a million paths. Both
	// indexes share a seed, so one hash serves both.
	files      fileIndex
	fileOrder  []*AddFile // nil where a file was removed again
	tombstones fileIndex
	tombOrder  []*RemoveFile // nil where a tombstone was cancelled by a later add
	txns       map[string]*SetTransaction
	domains    map[string]*DomainMetadata
	sidecars   []*Sidecar
	cpMeta     *CheckpointMetadata
	in         *interner
	// metadataOnly skips file actions (State, time travel by timestamp).
	metadataOnly bool
	// rowCountsOnly keeps only numRecords of each add's statistics (LoadOptions.RowCountsOnly).
	rowCountsOnly bool
	seed          maphash.Seed // of both indexes; decoders hash keys with it
	liveBytes     int64        // the sum of the live files' sizes
	sawDV         bool         // some add had a deletion vector
	sink          uint64       // keeps applyItems' cache-warming loads
}

func newReplayState() *replayState {
	seed := maphash.MakeSeed()
	return &replayState{
		seed:       seed,
		files:      newFileIndex(seed, 0),
		tombstones: newFileIndex(seed, 0),
		txns:       make(map[string]*SetTransaction),
		domains:    make(map[string]*DomainMetadata),
		in:         newInterner(),
	}
}

// apply folds one action into the state, in log order.
func (s *replayState) apply(a *Action) {
	if s.metadataOnly && (a.Add != nil || a.Remove != nil) {
		return
	}
	switch {
	case a.Add != nil:
		a.Add.PartitionValues = s.in.partitionValues(a.Add.PartitionValues)
		if s.rowCountsOnly {
			a.Add.Stats = rowCountStats(s.in, a.Add.Stats)
		}
		s.addFile(a.Add, fileHash(s.seed, a.Add.Path, a.Add.DeletionVector))
	case a.Remove != nil:
		a.Remove.PartitionValues = s.in.partitionValues(a.Remove.PartitionValues)
		s.removeFile(a.Remove, fileHash(s.seed, a.Remove.Path, a.Remove.DeletionVector))
	case a.MetaData != nil:
		s.metadata = a.MetaData
	case a.Protocol != nil:
		s.protocol = a.Protocol
	case a.Txn != nil:
		s.txns[a.Txn.AppID] = a.Txn
	case a.DomainMetadata != nil:
		if a.DomainMetadata.Removed {
			delete(s.domains, a.DomainMetadata.Domain)
		} else {
			s.domains[a.DomainMetadata.Domain] = a.DomainMetadata
		}
	case a.Sidecar != nil:
		s.sidecars = append(s.sidecars, a.Sidecar)
	case a.CheckpointMetadata != nil:
		s.cpMeta = a.CheckpointMetadata
	}
	// cdc and commitInfo do not contribute to table state.
}

// applyItems folds a batch of actions decoded from a checkpoint; their partition values are
// interned by the decoder already (and may be shared between files, so they are not rewritten
// here), and their keys are hashed.
func (s *replayState) applyItems(items []ckItem) {
	if !s.metadataOnly {
		// The index is far larger than the caches: load every home slot of the batch first,
		// independent loads that overlap, so that the inserts below mostly hit the cache.
		var sink uint64
		for _, it := range items {
			sink += s.files.touch(it.h)
			if s.tombstones.n > 0 {
				sink += s.tombstones.touch(it.h)
			}
		}
		s.sink = sink
	}
	for _, it := range items {
		switch {
		case it.add != nil:
			if !s.metadataOnly {
				s.addFile(it.add, it.h)
			}
		case it.act.Remove != nil:
			if !s.metadataOnly {
				s.removeFile(it.act.Remove, it.h)
			}
		default:
			s.apply(it.act)
		}
	}
}

// findLive looks up the live file with this key (h its hash) in the file index.
func (s *replayState) findLive(h uint64, path string, dv *DeletionVectorDescriptor) (slot, pos int, ok bool) {
	return s.files.find(h, func(pos int) bool {
		f := s.fileOrder[pos]
		return f.Path == path && sameDV(f.DeletionVector, dv)
	})
}

// findTombstone looks up the tombstone with this key (h its hash) in the tombstone index.
func (s *replayState) findTombstone(h uint64, path string, dv *DeletionVectorDescriptor) (slot, pos int, ok bool) {
	return s.tombstones.find(h, func(pos int) bool {
		r := s.tombOrder[pos]
		return r.Path == path && sameDV(r.DeletionVector, dv)
	})
}

// addFile makes a live, replacing a live file of the same key in place and cancelling its
// tombstone; h is the hash of its key (fileHash).
func (s *replayState) addFile(a *AddFile, h uint64) {
	if slot, pos, ok := s.findLive(h, a.Path, a.DeletionVector); ok {
		s.liveBytes -= s.fileOrder[pos].Size
		s.fileOrder[pos] = a
	} else {
		s.files.insert(slot, h, len(s.fileOrder))
		s.fileOrder = append(s.fileOrder, a)
	}
	s.liveBytes += a.Size
	s.sawDV = s.sawDV || a.DeletionVector != nil
	if s.tombstones.n > 0 {
		if slot, pos, ok := s.findTombstone(h, a.Path, a.DeletionVector); ok {
			s.tombOrder[pos] = nil
			s.tombstones.delete(slot)
		}
	}
}

// removeFile retires a live file of r's key and records r as its tombstone.
func (s *replayState) removeFile(r *RemoveFile, h uint64) {
	if slot, pos, ok := s.findLive(h, r.Path, r.DeletionVector); ok {
		s.liveBytes -= s.fileOrder[pos].Size
		s.fileOrder[pos] = nil
		s.files.delete(slot)
	}
	// Stats and tags of removes are dropped from tombstones, as checkpoints do: VACUUM needs
	// the path, size and time only, and a million tombstones with stats would double memory.
	r.Stats, r.Tags = "", nil
	if slot, pos, ok := s.findTombstone(h, r.Path, r.DeletionVector); ok {
		s.tombOrder[pos] = r
	} else {
		s.tombstones.insert(slot, h, len(s.tombOrder))
		s.tombOrder = append(s.tombOrder, r)
	}
}

// reserve sizes the file index for an expected number of files before a big checkpoint is read,
// sparing the incremental rehashing of a million-entry table.
func (s *replayState) reserve(n int) {
	if s.files.n == 0 && n > 0 {
		s.files.resize(n)
		s.fileOrder = make([]*AddFile, 0, n)
	}
}

// liveFiles returns the live files in log order, with the file index pointing into it.
func (s *replayState) liveFiles() []*AddFile {
	var remap []int32
	out := s.fileOrder[:0]
	for i, f := range s.fileOrder {
		if f == nil {
			if remap == nil {
				remap = make([]int32, len(s.fileOrder))
				for j := range i {
					remap[j] = int32(j)
				}
			}
			continue
		}
		if remap != nil {
			remap[i] = int32(len(out))
		}
		out = append(out, f)
	}
	if remap != nil {
		s.files.remap(remap)
	}
	return slices.Clip(out)
}

// liveTombstones returns the tombstones in log order.
func (s *replayState) liveTombstones() []*RemoveFile {
	out := make([]*RemoveFile, 0, s.tombstones.n)
	for _, r := range s.tombOrder {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}
