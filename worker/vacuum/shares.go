package vacuum

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Share makes a vacuum list and delete only one part of the table: share Index of Count
// of a scale-out run whose plan is made from version Version. The split is a pure function of that
// snapshot's file names and Count, so every share (and every retry of one) computes the same parts,
// and every key of the table belongs to exactly one share:
//
//   - the top-level directories holding the snapshot's files (partition directories) are balanced
//     over the shares by their number of files (scaleout.Balance); a directory holding more than a
//     share's fair part (a skewed partition) is cut into key ranges whose cut points are its own file
//     names;
//   - when the files sit at the table root (an unpartitioned table), the root is cut into Count key
//     ranges the same way;
//   - whatever no part covers — the log's own directories, files at the root of a partitioned table,
//     directories created after Version, and the leftovers of interrupted writes — is share 0's.
//
// The references kept are still the latest snapshot's, read after the run's commit.
type Share struct {
	Index, Count int
	Version      delta.Version
}

// span is one part of the key space: the keys starting with prefix that sort after `after` (when set)
// and at or before `upto` (when set). Cut points are keys of files, so Store.List's start-after is
// exactly a span's lower bound.
type span struct {
	prefix, after, upto string
	share               int
	files               int64
}

func (s span) contains(key string) bool {
	return strings.HasPrefix(key, s.prefix) && key > s.after && (s.upto == "" || key <= s.upto)
}

// start orders spans: every key of a span sorts at or after it.
func (s span) start() string { return max(s.prefix, s.after) }

// listPlan is the parts of a table's key space the shares list; spans are disjoint and sorted.
type listPlan struct {
	index int
	spans []span
}

// ownsRest: share 0 also lists every key outside the spans.
func (p *listPlan) ownsRest() bool { return p.index == 0 }

// planShares splits the key space of snap's files over count shares (Share's rules).
func planShares(snap *delta.Snapshot, index, count int) (*listPlan, error) {
	p := &listPlan{index: index}
	if count <= 1 {
		return p, nil
	}
	loc := snap.Table().Location()
	byDir := map[string][]string{}
	var total int64
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(loc, f.Path)
		if err != nil {
			continue // a file elsewhere (a shallow clone's): no listing of this table sees it
		}
		dir := ""
		if i := strings.IndexByte(key, '/'); i >= 0 {
			dir = key[:i+1]
		}
		byDir[dir] = append(byDir[dir], key)
		total++
	}
	if total == 0 {
		return p, nil
	}
	dirs := slices.Sorted(func(yield func(string) bool) {
		for d := range byDir {
			if !yield(d) {
				return
			}
		}
	})
	if len(dirs) == 1 && dirs[0] == "" {
		// Unpartitioned: Count ranges of the root; the first is the rest, share 0's.
		keys := byDir[""]
		slices.Sort(keys)
		for s, sp := range rangesOf("", keys, count) {
			if s > 0 && sp.files >= 0 {
				sp.share = s
				p.spans = append(p.spans, sp)
			}
		}
		return p, nil
	}
	fair := (total + int64(count) - 1) / int64(count)
	var units []span
	for _, d := range dirs {
		keys := byDir[d]
		switch {
		case d == "":
			// Files at the root of a partitioned table stay in the rest.
		case int64(len(keys)) > fair:
			slices.Sort(keys)
			pieces := int((int64(len(keys)) + fair - 1) / fair)
			for _, sp := range rangesOf(d, keys, pieces) {
				if sp.files >= 0 {
					units = append(units, sp)
				}
			}
		default:
			units = append(units, span{prefix: d, files: int64(len(keys))})
		}
	}
	for s, idx := range scaleout.Balance(len(units), count,
		func(i int) int64 { return units[i].files }, func(i int) string { return units[i].start() }) {
		for _, i := range idx {
			units[i].share = s
		}
	}
	slices.SortFunc(units, func(a, b span) int { return strings.Compare(a.start(), b.start()) })
	p.spans = units
	return p, nil
}

// rangesOf cuts sorted keys under prefix into n consecutive ranges of about equal counts, covering all
// of prefix's key space: the first from its start, the last to its end. An empty range in the middle
// gets files -1 (nothing to list: its bounds coincide).
func rangesOf(prefix string, keys []string, n int) []span {
	cuts := scaleout.Contiguous(len(keys), n, func(int) int64 { return 1 })
	out := make([]span, n)
	for s, c := range cuts {
		sp := span{prefix: prefix, files: int64(c[1] - c[0])}
		if c[0] > 0 {
			sp.after = keys[c[0]-1]
		}
		if s < n-1 {
			if c[1] == 0 || c[0] == c[1] {
				sp.files = -1
			} else {
				sp.upto = keys[c[1]-1]
			}
		}
		out[s] = sp
	}
	return out
}

// covering returns the span holding key, if any.
func (p *listPlan) covering(key string) (span, bool) {
	i := sort.Search(len(p.spans), func(i int) bool { return p.spans[i].start() > key }) - 1
	// The span starting at or before key holds it, unless key is the exclusive lower bound of that span,
	// in which case the one before holds it.
	for j := i; j >= 0 && j >= i-1; j-- {
		if p.spans[j].contains(key) {
			return p.spans[j], true
		}
	}
	return span{}, false
}

// owns reports whether key is in the share's part.
func (p *listPlan) owns(key string) bool {
	if sp, ok := p.covering(key); ok {
		return sp.share == p.index
	}
	return p.ownsRest()
}

// maxTail sorts after every continuation of a key by a valid UTF-8 name below U+10FFFF: listing after
// prefix+maxTail skips the prefix's subtree. A key whose tail sorts higher is still filtered out by its
// owner test, so a skip is only ever a shortcut.
const maxTail = "\U0010FFFF"

// list calls fn for every object of the share's part that is not under a hidden directory.
func (p *listPlan) list(ctx context.Context, store storage.Store, isHidden func(string) bool, fn func(storage.ObjectInfo)) error {
	for _, sp := range p.spans {
		if sp.share != p.index || sp.files < 0 {
			continue
		}
		err := walk(ctx, store, sp.prefix, sp.after, func(key string) (string, bool) {
			if sp.upto != "" && key > sp.upto {
				return "", true
			}
			return hiddenDirSkip(key, isHidden), false
		}, fn)
		if err != nil {
			return err
		}
	}
	if !p.ownsRest() {
		return nil
	}
	return walk(ctx, store, "", "", func(key string) (string, bool) {
		if sp, ok := p.covering(key); ok {
			switch {
			case sp.upto != "":
				return sp.upto, false
			case sp.prefix == "":
				return "", true // the root's last range runs to the end of the key space
			default:
				return sp.prefix + maxTail, false
			}
		}
		return hiddenDirSkip(key, isHidden), false
	}, fn)
}

// hiddenDirSkip is the cursor past key's first hidden directory, or "" when no directory of key is
// hidden (the file name itself is judged by hiddenPath).
func hiddenDirSkip(key string, isHidden func(string) bool) string {
	if strings.HasPrefix(key, delta.LogDir) {
		return delta.LogDir + maxTail
	}
	off := 0
	for {
		i := strings.IndexByte(key[off:], '/')
		if i < 0 {
			return ""
		}
		if isHidden(key[off : off+i]) {
			return key[:off+i+1] + maxTail
		}
		off += i + 1
	}
}

// walk lists the keys under prefix after `after`, asking next about each: a non-empty cursor beyond the
// key restarts the listing after it (the key and everything up to the cursor are skipped), stop ends
// it. Otherwise fn gets the object.
func walk(ctx context.Context, store storage.Store, prefix, after string, next func(key string) (cursor string, stop bool), fn func(storage.ObjectInfo)) error {
	cursor := after
	for {
		restart := ""
		for obj, err := range store.List(ctx, prefix, cursor) {
			if err != nil {
				return fmt.Errorf("list files: %w", err)
			}
			c, stop := next(obj.Key)
			if stop {
				return nil
			}
			if c > obj.Key {
				restart = c
				break
			}
			if c != "" {
				continue // a key the shortcut cannot skip past: its owner test still excludes it
			}
			fn(obj)
		}
		if restart == "" {
			return nil
		}
		cursor = restart
	}
}
