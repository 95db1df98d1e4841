package optimize

import (
	"encoding/binary"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// partitionMemo computes a per-partition answer once per distinct partition instead of once per
// file: a million files in a thousand partitions normalize a thousand partition keys (and bind a
// --where a thousand times), not a million, and the planner's garbage stays proportional to the
// partitions. Files are matched by their raw partition values (column, null, value), so equal
// values serialized alike share an entry; values that normalize equal but are spelled differently
// (a date with or without padding) get entries of their own that hold the same answer.
type partitionMemo[V any] struct {
	compute func(*delta.AddFile) (V, error)
	m       map[string]V
	key     []byte
}

// partitionMemoLimit bounds the entries: beyond it (a table partitioned by a unique id) answers are
// computed per file, as without the memo.
const partitionMemoLimit = 1 << 16

func newPartitionMemo[V any](compute func(*delta.AddFile) (V, error)) *partitionMemo[V] {
	return &partitionMemo[V]{compute: compute, m: map[string]V{}}
}

func (pm *partitionMemo[V]) get(f *delta.AddFile) (V, error) {
	k := pm.key[:0]
	for _, pv := range f.PartitionValues {
		k = binary.AppendUvarint(k, uint64(len(pv.Column)))
		k = append(k, pv.Column...)
		if pv.Null {
			k = append(k, 0)
			continue
		}
		k = append(k, 1)
		k = binary.AppendUvarint(k, uint64(len(pv.Value)))
		k = append(k, pv.Value...)
	}
	pm.key = k
	if v, ok := pm.m[string(k)]; ok {
		return v, nil
	}
	v, err := pm.compute(f)
	if err == nil && len(pm.m) < partitionMemoLimit {
		pm.m[string(k)] = v
	}
	return v, err
}
