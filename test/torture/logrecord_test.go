package torture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// logRecorder keeps a copy of every commit of a table, read from the raw files as soon as the
// harness sees it, so that the harness can tell an overwritten commit from the one it saw, and
// replay the log itself — independently of worker/delta, and even after log cleanup deleted the
// early commits.
type logRecorder struct {
	commits map[int64][]byte
	high    int64 // highest version recorded, -1 before the first
	// replayed caches the newest replay: the live files at version replayedAt.
	replayed   map[string]json.RawMessage // path -> its deletion vector descriptor (nil: none)
	replayedAt int64
}

func newLogRecorder() *logRecorder {
	return &logRecorder{commits: map[int64][]byte{}, high: -1, replayed: map[string]json.RawMessage{}, replayedAt: -1}
}

// The names the harness recognises in _delta_log, by itself.
var (
	commitName     = regexp.MustCompile(`^_delta_log/(\d{20})\.json$`)
	checkpointName = regexp.MustCompile(`^_delta_log/(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-f-]{36})?\.(parquet|json)$`)
	otherLogName   = regexp.MustCompile(`^_delta_log/(_last_checkpoint|\d{20}\.crc|\d{20}\.\d{20}\.compacted\.json|_sidecars/.+)$`)
	// tempName is a temp file of an interrupted write, ours or anybody's: hidden, ".tmp-<digits>".
	tempName = regexp.MustCompile(`(^|/)\.[^/]+\.tmp-\d+$`)
)

// logListing is what the raw _delta_log holds.
type logListing struct {
	commits     []int64 // ascending
	checkpoints map[int64]bool
	temps       []string
	unknown     []string
}

func listLog(files []rawFile) logListing {
	l := logListing{checkpoints: map[int64]bool{}}
	for _, f := range files {
		if !strings.HasPrefix(f.key, "_delta_log/") {
			continue
		}
		switch {
		case commitName.MatchString(f.key):
			v, _ := strconv.ParseInt(commitName.FindStringSubmatch(f.key)[1], 10, 64)
			l.commits = append(l.commits, v)
		case checkpointName.MatchString(f.key):
			v, _ := strconv.ParseInt(checkpointName.FindStringSubmatch(f.key)[1], 10, 64)
			l.checkpoints[v] = true
		case tempName.MatchString(f.key):
			l.temps = append(l.temps, f.key)
		case otherLogName.MatchString(f.key):
		default:
			l.unknown = append(l.unknown, f.key)
		}
	}
	slices.Sort(l.commits)
	return l
}

// contiguous checks the log's versions: no gap between the oldest and the newest commit, and a
// log that does not start at 0 has a checkpoint to start from (what log cleanup leaves). It returns
// the newest version.
func (l logListing) contiguous() (int64, error) {
	if len(l.commits) == 0 {
		return -1, errors.New("the log holds no commit")
	}
	lo, hi := l.commits[0], l.commits[len(l.commits)-1]
	if int64(len(l.commits)) != hi-lo+1 {
		var gaps []int64
		for v, i := lo, 0; v <= hi; v++ {
			if l.commits[i] == v {
				i++
				continue
			}
			gaps = append(gaps, v)
		}
		return hi, fmt.Errorf("versions %d..%d have gaps: %v missing", lo, hi, gaps)
	}
	if lo == 0 {
		return hi, nil
	}
	// Log cleanup deletes oldest first: an interrupted one leaves commits below the checkpoint it
	// keeps, which no version needs any more. What must hold is that some checkpoint (at the
	// commit before the oldest, or later) makes the newest version reconstructable.
	for c := range l.checkpoints {
		if c >= lo-1 && c <= hi {
			return hi, nil
		}
	}
	return hi, fmt.Errorf("the log starts at commit %d and has no checkpoint from version %d on: versions before it were deleted without one", lo, lo-1)
}

// observe records every commit in files that it has not seen, and checks every one it has seen
// against its copy: a commit whose bytes changed was overwritten, which the protocol never allows.
func (r *logRecorder) observe(s *site, files []rawFile) error {
	var errs []error
	for _, f := range files {
		m := commitName.FindStringSubmatch(f.key)
		if m == nil {
			continue
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		if err := r.record(s, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// record reads commit v and records it or compares it with the copy; a commit that vanished in
// between is not an error (log cleanup).
func (r *logRecorder) record(s *site, v int64) error {
	data, err := s.readRaw(fmt.Sprintf("_delta_log/%020d.json", v))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if old, ok := r.commits[v]; ok {
		if !bytes.Equal(old, data) {
			return fmt.Errorf("commit %d was overwritten: %d bytes seen first (%.120q…), %d bytes now (%.120q…)", v, len(old), old, len(data), data)
		}
		return nil
	}
	r.commits[v] = data
	r.high = max(r.high, v)
	return nil
}

// fileAction is the part of an add or remove the harness replays.
type fileAction struct {
	Path           string          `json:"path"`
	DataChange     bool            `json:"dataChange"`
	DeletionVector json.RawMessage `json:"deletionVector"`
	DeletionTime   int64           `json:"deletionTimestamp"`
}

// commitActions is what one commit adds and removes, and its operation.
type commitActions struct {
	adds, removes []fileAction
	operation     string
}

// parseCommit reads the file actions of one commit with encoding/json alone.
func parseCommit(v int64, data []byte) (commitActions, error) {
	var c commitActions
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var a struct {
			Add        *fileAction `json:"add"`
			Remove     *fileAction `json:"remove"`
			CommitInfo *struct {
				Operation string `json:"operation"`
			} `json:"commitInfo"`
		}
		if err := json.Unmarshal(line, &a); err != nil {
			return c, fmt.Errorf("commit %d: %w", v, err)
		}
		for _, f := range []*fileAction{a.Add, a.Remove} {
			if f == nil {
				continue
			}
			p, err := url.PathUnescape(f.Path)
			if err != nil || strings.Contains(p, "://") || strings.HasPrefix(p, "/") {
				return c, fmt.Errorf("commit %d: path %q is not a relative URI-encoded path", v, f.Path)
			}
			f.Path = p
		}
		if a.Add != nil {
			c.adds = append(c.adds, *a.Add)
		}
		if a.Remove != nil {
			c.removes = append(c.removes, *a.Remove)
		}
		if a.CommitInfo != nil {
			c.operation = a.CommitInfo.Operation
		}
	}
	if len(data) == 0 {
		return c, fmt.Errorf("commit %d is empty", v)
	}
	return c, sc.Err()
}

// liveFiles replays the recorded commits 0..v and returns the data files live at v.
func (r *logRecorder) liveFiles(v int64) ([]string, error) {
	live, err := r.liveFileDVs(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(live))
	for p := range live {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// liveFileDVs replays the recorded commits 0..v and returns the data files live at v with the
// deletion vector descriptor of each (nil for none), as the log spells it.
func (r *logRecorder) liveFileDVs(v int64) (map[string]json.RawMessage, error) {
	live, from := map[string]json.RawMessage{}, int64(0)
	if r.replayedAt >= 0 && r.replayedAt <= v {
		maps.Copy(live, r.replayed)
		from = r.replayedAt + 1
	}
	for i := from; i <= v; i++ {
		data, ok := r.commits[i]
		if !ok {
			return nil, fmt.Errorf("the harness never saw commit %d, so it cannot replay the log to %d", i, v)
		}
		c, err := parseCommit(i, data)
		if err != nil {
			return nil, err
		}
		for _, rm := range c.removes {
			delete(live, rm.Path)
		}
		for _, a := range c.adds {
			dv := a.DeletionVector
			if string(dv) == "null" {
				dv = nil
			}
			live[a.Path] = dv
		}
	}
	r.replayed, r.replayedAt = live, v
	return maps.Clone(live), nil
}
