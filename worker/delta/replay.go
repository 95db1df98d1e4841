package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/storage"
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
	// Live files and tombstones are kept in log order (checkpoint rows, then commits) with a map
	// from key to position: a deterministic order without sorting a million paths.
	files      map[FileKey]fileSlot
	fileOrder  []*AddFile // nil where a file was removed again
	tombstones map[FileKey]int
	tombOrder  []*RemoveFile
	txns       map[string]*SetTransaction
	domains    map[string]*DomainMetadata
	sidecars   []*Sidecar
	cpMeta     *CheckpointMetadata
	in         *interner
	// metadataOnly skips file actions (State, time travel by timestamp).
	metadataOnly bool
}

func newReplayState() *replayState {
	return &replayState{
		files:      make(map[FileKey]fileSlot),
		tombstones: make(map[FileKey]int),
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
		k := a.Add.Key()
		if slot, ok := s.files[k]; ok {
			s.fileOrder[slot.idx] = a.Add
			s.files[k] = fileSlot{a.Add, slot.idx}
		} else {
			s.files[k] = fileSlot{a.Add, len(s.fileOrder)}
			s.fileOrder = append(s.fileOrder, a.Add)
		}
		if len(s.tombstones) > 0 {
			if i, ok := s.tombstones[k]; ok {
				s.tombOrder[i] = nil
				delete(s.tombstones, k)
			}
		}
	case a.Remove != nil:
		k := a.Remove.Key()
		if slot, ok := s.files[k]; ok {
			s.fileOrder[slot.idx] = nil
			delete(s.files, k)
		}
		// Stats and tags of removes are dropped from tombstones, as checkpoints do: VACUUM needs
		// the path, size and time only, and a million tombstones with stats would double memory.
		a.Remove.Stats, a.Remove.Tags = "", nil
		a.Remove.PartitionValues = s.in.partitionValues(a.Remove.PartitionValues)
		if i, ok := s.tombstones[k]; ok {
			s.tombOrder[i] = a.Remove
		} else {
			s.tombstones[k] = len(s.tombOrder)
			s.tombOrder = append(s.tombOrder, a.Remove)
		}
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

// fileSlot is a live file and its position in fileOrder.
type fileSlot struct {
	add *AddFile
	idx int
}

// reserve sizes the file map for an expected number of files before a big checkpoint is read,
// sparing the incremental rehashing of a million-entry map.
func (s *replayState) reserve(n int) {
	if len(s.files) == 0 && n > 0 {
		s.files = make(map[FileKey]fileSlot, n)
		s.fileOrder = make([]*AddFile, 0, n)
	}
}

// liveFiles returns the live files in log order.
func (s *replayState) liveFiles() []*AddFile {
	out := s.fileOrder[:0]
	for _, f := range s.fileOrder {
		if f != nil {
			out = append(out, f)
		}
	}
	return slices.Clip(out)
}

// liveTombstones returns the tombstones in log order.
func (s *replayState) liveTombstones() []*RemoveFile {
	out := make([]*RemoveFile, 0, len(s.tombstones))
	for _, r := range s.tombOrder {
		if r != nil {
			out = append(out, r)
		}
	}
	return out
}

// readJSONActions streams the actions of a newline-delimited JSON log file (commit, compaction,
// or V2 JSON checkpoint). Blank lines are skipped; a line that is not JSON is an error naming the
// file and line, because skipping it could lose an add or a remove.
func readJSONActions(ctx context.Context, store storage.Store, key string, fn func(*Action) error) error {
	r, err := store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("open %s: %w", key, err)
	}
	defer r.Close()
	br := bufio.NewReaderSize(io.NewSectionReader(r, 0, r.Size()), 256<<10)
	for line := 1; ; line++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			var a Action
			if jerr := json.Unmarshal(b, &a); jerr != nil {
				return fmt.Errorf("%s line %d: invalid action: %w", key, line, jerr)
			}
			if ferr := fn(&a); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", key, err)
		}
	}
}

// parseActions decodes the actions of an in-memory commit file.
func parseActions(data []byte) ([]*Action, error) {
	var out []*Action
	for i, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var a Action
		if err := json.Unmarshal(line, &a); err != nil {
			return nil, fmt.Errorf("line %d: invalid action: %w", i+1, err)
		}
		out = append(out, &a)
	}
	return out, nil
}
