package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// List implements Store. It streams a depth-first walk instead of collecting and sorting every key:
// if each directory's entries are visited in the order of their key prefixes ("name" for a file,
// "name/" for a directory), the walk yields keys in global byte order, because every key below a
// directory "d" starts with "d/" and no sibling name contains '/'. Memory is bounded by the widest
// directory on the current path, and subtrees that cannot match prefix or startAfter are not read.
func (s *LocalStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("list %s: %w", s.Location(), err))
			return
		}
		l := &localLister{s: s, ctx: ctx, prefix: prefix, startAfter: startAfter, yield: yield}
		l.walk(startDir(prefix))
	}
}

// startDir is the deepest directory a prefix names completely: "_delta_log/0000001" → "_delta_log/".
func startDir(prefix string) string {
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		return prefix[:i+1]
	}
	return ""
}

// Leftovers implements LeftoverStore: the same walk as List, yielding only deltakeeper's temp files
// (temp.go), which List hides.
func (s *LocalStore) Leftovers(ctx context.Context, prefix string) iter.Seq2[Leftover, error] {
	return func(yield func(Leftover, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(Leftover{}, fmt.Errorf("list %s: %w", s.Location(), err))
			return
		}
		l := &localLister{s: s, ctx: ctx, prefix: prefix, temps: true, yield: func(info ObjectInfo, err error) bool {
			if err != nil {
				return yield(Leftover{}, err)
			}
			lo, _ := tempLeftover(info)
			return yield(lo, nil)
		}}
		l.walk(startDir(prefix))
	}
}

// RemoveLeftover implements LeftoverStore. Only deltakeeper's temp files are ever removed.
func (s *LocalStore) RemoveLeftover(ctx context.Context, lo Leftover) error {
	if lo.UploadID != "" || !isTempKey(lo.Key) {
		return fmt.Errorf("remove leftover %s: not a deltakeeper temp file", s.uri(lo.Key))
	}
	return s.Delete(ctx, lo.Key)
}

type localLister struct {
	s          *LocalStore
	ctx        context.Context
	prefix     string
	startAfter string
	temps      bool // yield only temp files (Leftovers) instead of only objects
	yield      func(ObjectInfo, error) bool
}

// listEntry is a directory entry with the key prefix it stands for.
type listEntry struct {
	key   string // "dir/name" for a file, "dir/name/" for a directory
	entry fs.DirEntry
	isDir bool
}

// walk lists the directory whose keys start with dirKey ("" or ending in '/'); it returns false once
// the consumer stopped or an error was yielded.
func (l *localLister) walk(dirKey string) bool {
	if err := l.ctx.Err(); err != nil {
		l.yield(ObjectInfo{}, fmt.Errorf("list %s: %w", l.s.Location(), err))
		return false
	}
	dir := filepath.Join(l.s.root, filepath.FromSlash(dirKey))
	entries, err := os.ReadDir(dir)
	if err != nil {
		// A missing root or a directory removed while we walk simply has no objects.
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return true
		}
		l.yield(ObjectInfo{}, fmt.Errorf("list %s: %w", l.s.Location(), err))
		return false
	}

	todo := make([]listEntry, 0, len(entries))
	for _, e := range entries {
		isDir, ok := l.kind(dir, e)
		if !ok {
			continue
		}
		key := dirKey + e.Name()
		if isDir {
			key += "/"
		}
		if l.wanted(key, isDir) {
			todo = append(todo, listEntry{key: key, entry: e, isDir: isDir})
		}
	}
	slices.SortFunc(todo, func(a, b listEntry) int { return strings.Compare(a.key, b.key) })

	for _, e := range todo {
		if e.isDir {
			if !l.walk(e.key) {
				return false
			}
			continue
		}
		fi, err := os.Stat(filepath.Join(dir, e.entry.Name()))
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue // deleted since ReadDir
			}
			l.yield(ObjectInfo{}, fmt.Errorf("list %s: %w", l.s.Location(), err))
			return false
		}
		if !l.yield(ObjectInfo{Key: e.key, Size: fi.Size(), ModTime: fi.ModTime()}, nil) {
			return false
		}
	}
	return true
}

// kind classifies an entry, following symlinks to files. Temp files of in-flight writes (or, when
// listing temps, everything else) and symlinks to directories (which could form cycles) are skipped.
func (l *localLister) kind(dir string, e fs.DirEntry) (isDir, ok bool) {
	switch t := e.Type(); {
	case t.IsDir():
		return true, true
	case t.IsRegular():
		return false, isTempName(e.Name()) == l.temps
	case l.temps:
		return false, false // temps are regular files we created, never links
	case t&fs.ModeSymlink != 0:
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		return false, err == nil && fi.Mode().IsRegular()
	default:
		return false, false // sockets, devices, pipes: not objects
	}
}

// wanted reports whether a file key, or any key below a directory key, can match.
func (l *localLister) wanted(key string, isDir bool) bool {
	if !isDir {
		return strings.HasPrefix(key, l.prefix) && key > l.startAfter
	}
	// The directory matters if its keys start with the prefix, or the prefix continues inside it.
	if !strings.HasPrefix(key, l.prefix) && !strings.HasPrefix(l.prefix, key) {
		return false
	}
	// Every key below "d/" sorts at or before startAfter when startAfter does not continue inside
	// "d/" and "d/" < startAfter: they differ from startAfter within "d/".
	if l.startAfter != "" && !strings.HasPrefix(l.startAfter, key) && key < l.startAfter {
		return false
	}
	return true
}
