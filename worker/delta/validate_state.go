package delta

import (
	"errors"
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// One validation of what a snapshot rests on, applied by every load (so by every command) rather
// than by the commands that happen to look. Each violation wraps ErrCorruptTable and names what is
// wrong and, where known, the log file it came from. What blocks what:
//
//   - reads and writes: a metaData without schemaString or with one that does not parse, duplicate
//     column names, partition columns missing from the schema, repeated or not of a primitive type,
//     a relative file path escaping the table root, a commit adding (or removing) the same path
//     twice. A reader cannot interpret such a table without guessing, and a guess can lose or
//     double rows.
//   - writes only (CheckOperation of anything but OpRead): a file path that is an absolute URI
//     outside the table (a shallow clone's files, say). Reading the log is still meaningful, and
//     reading that file fails naming it; but no command deletes or rewrites around files it cannot
//     reach.

// validateMetadata parses and checks the table's metadata; source names the log file the metaData
// action came from.
func validateMetadata(table string, v Version, md *Metadata, source string) (*types.StructType, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("table %s at version %d: the metaData action in %s %s: %w", table, v, source, fmt.Sprintf(format, args...), ErrCorruptTable)
	}
	if strings.TrimSpace(md.SchemaString) == "" {
		return nil, corrupt("has no schemaString (the table schema); the table cannot be read without it")
	}
	schema, err := types.ParseSchema(md.SchemaString)
	if err != nil {
		return nil, corrupt("has a schemaString that does not parse: %v", err)
	}
	if err := checkDuplicateColumns(schema, ""); err != nil {
		return nil, corrupt("%v", err)
	}
	seen := map[string]bool{}
	for _, c := range md.PartitionColumns {
		f := schema.Field(c)
		switch {
		case f == nil:
			return nil, corrupt("names partition column %q, which is not a top-level column of the schema", c)
		case seen[strings.ToLower(c)]:
			return nil, corrupt("names partition column %q twice", c)
		}
		if _, ok := f.Type.(*types.PrimitiveType); !ok {
			return nil, corrupt("names partition column %q of type %s; partition columns must be of a primitive type", c, f.Type)
		}
		seen[strings.ToLower(c)] = true
	}
	return schema, nil
}

// checkDuplicateColumns refuses two fields of one struct whose names differ at most in case (Delta
// column names are case-insensitive), at any depth.
func checkDuplicateColumns(t types.DataType, prefix string) error {
	switch t := t.(type) {
	case *types.StructType:
		seen := make(map[string]string, len(t.Fields))
		for _, f := range t.Fields {
			k := strings.ToLower(f.Name)
			if prev, dup := seen[k]; dup {
				return fmt.Errorf("has two columns named %q and %q in the schema", prefix+prev, prefix+f.Name)
			}
			seen[k] = f.Name
			if err := checkDuplicateColumns(f.Type, prefix+f.Name+"."); err != nil {
				return err
			}
		}
	case *types.ArrayType:
		return checkDuplicateColumns(t.ElementType, prefix+"element.")
	case *types.MapType:
		if err := checkDuplicateColumns(t.KeyType, prefix+"key."); err != nil {
			return err
		}
		return checkDuplicateColumns(t.ValueType, prefix+"value.")
	}
	return nil
}

// checkDuplicateFileActions refuses a commit that adds, or removes, the same path twice: the
// protocol allows at most one action of each type per path in a version, and replaying two adds of
// one path with different deletion vectors would make its rows count twice.
func checkDuplicateFileActions(table string, f logFile, actions []*Action) error {
	if len(actions) < 2 {
		return nil
	}
	var adds, removes map[string]bool
	for _, a := range actions {
		var p, kind string
		var seen *map[string]bool
		switch {
		case a.Add != nil:
			p, kind, seen = a.Add.Path, "adds", &adds
		case a.Remove != nil:
			p, kind, seen = a.Remove.Path, "removes", &removes
		default:
			continue
		}
		if *seen == nil {
			*seen = make(map[string]bool, len(actions))
		}
		if (*seen)[p] {
			return fmt.Errorf("table %s: commit %s %s file %s twice; a version may add or remove a path once: %w", table, f.Key, kind, p, ErrCorruptTable)
		}
		(*seen)[p] = true
	}
	return nil
}

// errOutsideTable marks an absolute file path outside the table root.
var errOutsideTable = errors.New("outside the table")

// checkFilePath checks one path from the log, without allocating for the usual case: a relative
// path in which no ".." segment can appear, even once percent-decoded.
func checkFilePath(table, p string) error {
	if isAbsoluteURI(p) || strings.HasPrefix(p, "/") {
		if _, err := ObjectKey(table, p); err != nil {
			return fmt.Errorf("%w: %w", errOutsideTable, err)
		}
		return nil
	}
	if p != "" && !strings.Contains(p, "..") && !strings.Contains(p, "%2e") && !strings.Contains(p, "%2E") &&
		!strings.Contains(p, "%00") && strings.IndexByte(p, 0) < 0 {
		return nil
	}
	_, err := ObjectKey(table, p)
	return err
}

// checkFilePaths checks the paths of the live files and tombstones: a relative path escaping the
// root is corruption (returned as fatal); the first absolute path outside the table is returned as
// writeOnly, for CheckOperation to refuse writes with.
func checkFilePaths(table string, v Version, files []*AddFile, tombstones []*RemoveFile) (writeOnly, fatal error) {
	check := func(kind, p string) error {
		err := checkFilePath(table, p)
		if err == nil {
			return nil
		}
		if errors.Is(err, errOutsideTable) {
			if writeOnly == nil {
				writeOnly = fmt.Errorf("table %s at version %d: %s file %s lies outside the table root; deltakeeper deletes and rewrites only files under the table (is this a shallow clone?): %w",
					table, v, kind, p, ErrUnsupportedTable)
			}
			return nil
		}
		return fmt.Errorf("table %s at version %d: %s file: %w: %w", table, v, kind, err, ErrCorruptTable)
	}
	for _, f := range files {
		if err := check("live", f.Path); err != nil {
			return nil, err
		}
	}
	for _, r := range tombstones {
		if err := check("removed", r.Path); err != nil {
			return nil, err
		}
	}
	return writeOnly, nil
}

// checkWritable is CheckOperation's part of the validation: violations that block writes only.
func (s *Snapshot) checkWritable(op Operation) error {
	if op == OpRead || s.writeViolation == nil {
		return nil
	}
	return s.writeViolation
}

// checkLiveFiles checks what every command relies on in each live file's add action: a size that
// can be a size, and a deletion-vector descriptor the protocol defines. Every command runs it, so
// that a reader and a writer never disagree about whether the table is readable; the DV's bitmap
// itself is checked where it is read (LoadDeletionVector).
func checkLiveFiles(table string, v Version, files []*AddFile) error {
	for _, f := range files {
		if f.Size < 0 {
			return fmt.Errorf("table %s at version %d: live file %s has size %d; an add action's size is its length in bytes: %w",
				table, v, f.Path, f.Size, ErrCorruptTable)
		}
		if d := f.DeletionVector; d != nil {
			if err := checkDVDescriptor(d); err != nil {
				return fmt.Errorf("table %s at version %d: live file %s: deletionVector %s: %w: %w", table, v, f.Path, d.UniqueID(), err, ErrCorruptTable)
			}
		}
	}
	return nil
}

func checkDVDescriptor(d *DeletionVectorDescriptor) error {
	switch {
	case d.Cardinality < 0:
		return fmt.Errorf("negative cardinality %d", d.Cardinality)
	case d.SizeInBytes < 0:
		return fmt.Errorf("negative sizeInBytes %d", d.SizeInBytes)
	case d.Offset != nil && *d.Offset < 0:
		return fmt.Errorf("negative offset %d", *d.Offset)
	}
	switch d.StorageType {
	case DVStorageInline:
		if _, err := z85DecodeString(d.PathOrInlineDv); err != nil {
			return fmt.Errorf("inline bitmap: %w", err)
		}
		return nil
	case DVStorageUUID:
		_, err := d.StorageKey("")
		return err
	case DVStoragePath:
		return nil // an absolute path: where it points is checked when it is read
	}
	return fmt.Errorf("storage type %q is not defined by the protocol (u, i or p)", d.StorageType)
}
