package delta

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Version is a table version: the number of a commit file in _delta_log. It is a distinct type so
// that versions are not mixed up with row counts, sizes or timestamps.
type Version int64

// NoVersion stands for "no version": before the first commit, or "latest" in options.
const NoVersion Version = -1

// String renders the plain number.
func (v Version) String() string { return strconv.FormatInt(int64(v), 10) }

// Log layout (PROTOCOL.md §Delta Log Entries, §Checkpoints, §Log Compaction Files).
const (
	LogDir             = "_delta_log/"
	SidecarDir         = LogDir + "_sidecars/"
	LastCheckpointKey  = LogDir + "_last_checkpoint"
	versionDigits      = 20
	partDigits         = 10
	checkpointInfix    = ".checkpoint."
	compactionSuffix   = ".compacted.json"
	checkpointFileTail = ".checkpoint.parquet"
)

// CommitKey is the storage key of the commit file for v.
func CommitKey(v Version) string { return fmt.Sprintf("%s%020d.json", LogDir, int64(v)) }

// ClassicCheckpointKey is the storage key of the single-file classic checkpoint for v.
func ClassicCheckpointKey(v Version) string {
	return fmt.Sprintf("%s%020d%s", LogDir, int64(v), checkpointFileTail)
}

// versionPrefix is the key prefix shared by every log file of version v; as a List startAfter
// argument it yields all files of v and later (a string sorts before its extensions).
func versionPrefix(v Version) string { return fmt.Sprintf("%s%020d", LogDir, int64(v)) }

type logFileKind int

const (
	kindCommit logFileKind = iota + 1
	kindCheckpointClassic
	kindCheckpointMultiPart
	kindCheckpointUUID
	kindCompaction
	kindChecksum
)

// logFile is one recognised file directly under _delta_log/.
type logFile struct {
	storage.ObjectInfo
	kind     logFileKind
	version  Version // the commit/checkpoint version; the start version of a compaction file
	end      Version // compaction files only: last version covered (inclusive)
	part     int     // multi-part checkpoints: 1-based part number
	numParts int     // multi-part checkpoints: total parts
	format   string  // checkpoints: "parquet" or "json"
}

// parseLogFile recognises the protocol's file names and ignores everything else (.crc files of
// Hadoop, temp files, _sidecars/, _staged_commits/ …), as readers must.
func parseLogFile(info storage.ObjectInfo) (logFile, bool) {
	name, ok := strings.CutPrefix(info.Key, LogDir)
	if !ok || strings.Contains(name, "/") || len(name) < versionDigits+1 {
		return logFile{}, false
	}
	v, ok := parseDigits(name[:versionDigits])
	if !ok {
		return logFile{}, false
	}
	f := logFile{ObjectInfo: info, version: Version(v)}
	rest := name[versionDigits:]
	switch {
	case rest == ".json":
		f.kind = kindCommit
	case rest == ".crc":
		f.kind = kindChecksum
	case rest == checkpointFileTail:
		f.kind, f.format = kindCheckpointClassic, "parquet"
	case strings.HasSuffix(rest, compactionSuffix):
		mid := strings.TrimSuffix(rest, compactionSuffix)
		if len(mid) != versionDigits+1 || mid[0] != '.' {
			return logFile{}, false
		}
		end, ok := parseDigits(mid[1:])
		if !ok || Version(end) < f.version {
			return logFile{}, false
		}
		f.kind, f.end = kindCompaction, Version(end)
	case strings.HasPrefix(rest, checkpointInfix):
		return parseCheckpointName(f, strings.TrimPrefix(rest, checkpointInfix))
	default:
		return logFile{}, false
	}
	return f, true
}

// parseCheckpointName handles "<o>.<p>.parquet" (multi-part) and "<uuid>.{json,parquet}" (V2).
func parseCheckpointName(f logFile, rest string) (logFile, bool) {
	stem, format, ok := cutExt(rest)
	if !ok {
		return logFile{}, false
	}
	if o, p, ok := strings.Cut(stem, "."); ok && len(o) == partDigits && len(p) == partDigits {
		part, ok1 := parseDigits(o)
		num, ok2 := parseDigits(p)
		if !ok1 || !ok2 || format != "parquet" || part < 1 || part > num {
			return logFile{}, false
		}
		f.kind, f.part, f.numParts, f.format = kindCheckpointMultiPart, int(part), int(num), format
		return f, true
	}
	if !isUUID(stem) {
		return logFile{}, false
	}
	f.kind, f.format = kindCheckpointUUID, format
	return f, true
}

func cutExt(s string) (stem, ext string, ok bool) {
	if stem, ok := strings.CutSuffix(s, ".parquet"); ok {
		return stem, "parquet", true
	}
	if stem, ok := strings.CutSuffix(s, ".json"); ok {
		return stem, "json", true
	}
	return "", "", false
}

func parseDigits(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// isUUID accepts the canonical 8-4-4-4-12 hex form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
