package delta

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Reading newline-delimited JSON log files (commits, log compaction files, V2 JSON checkpoints)
// in bounded memory. A line that fits the read buffer, as nearly every line does, is decoded with
// encoding/json as it stands. A longer line is walked by the streaming scanner of
// actions_scan.go: the actions deltakeeper keeps (add, remove, metaData, …) are captured and
// decoded, while commitInfo's free-form content and the actions it never uses (cdc, unknown ones)
// are skipped without being held, so a 200 MB commitInfo costs a read buffer, not gigabytes.

// logLineBuffer is the read buffer, and so the longest line decoded in one piece.
const logLineBuffer = 256 << 10

// commitInfoFieldLimit bounds each commitInfo field kept from a long line; a field larger than
// this (an engine's whole query plan, say) is dropped: commitInfo is informational, and the fields
// deltakeeper relies on (timestamps, txnId, isBlindAppend) are a few bytes.
const commitInfoFieldLimit = 1 << 20

// readOptions say what a reader of a JSON log file keeps.
type readOptions struct {
	// commitInfo keeps commitInfo actions (the snapshot version's commit, conflict checks);
	// otherwise they are skipped unread.
	commitInfo bool
}

// readJSONActions streams the actions of a newline-delimited JSON log file, keeping commitInfo.
func readJSONActions(ctx context.Context, store storage.Store, key string, fn func(*Action) error) error {
	return readLogFile(ctx, store, key, readOptions{commitInfo: true}, fn)
}

// readLogFile streams the actions of a newline-delimited JSON log file (commit, compaction, or V2
// JSON checkpoint) to fn. Blank lines are skipped. A file without any action, or a line that is
// not a JSON object, is corruption (ErrCorruptTable, naming the file and line): skipping it could
// lose an add or a remove, and an empty commit file is never what a writer meant to publish.
func readLogFile(ctx context.Context, store storage.Store, key string, opts readOptions, fn func(*Action) error) error {
	r, err := store.Open(ctx, key)
	if err != nil {
		return fmt.Errorf("open %s: %w", key, err)
	}
	defer r.Close()
	return decodeLogFile(ctx, io.NewSectionReader(r, 0, r.Size()), key, opts, fn)
}

// decodeLogFile is readLogFile on a reader; key names the file in errors.
func decodeLogFile(ctx context.Context, r io.Reader, key string, opts readOptions, fn func(*Action) error) error {
	d := &lineDecoder{br: bufio.NewReaderSize(r, logLineBuffer), key: key, opts: opts, line: 1}
	actions := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		a, err := d.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		actions++
		if a == nil {
			continue // a skipped commitInfo or an action deltakeeper does not use
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	if actions == 0 {
		return fmt.Errorf("%s has no actions (%d bytes): a log file is never empty; it was truncated or not written completely: %w",
			key, d.bytes, ErrCorruptTable)
	}
	return nil
}

// parseActions decodes the actions of an in-memory log file (tests, small files).
func parseActions(key string, data []byte) ([]*Action, error) {
	var out []*Action
	err := decodeLogFile(context.Background(), bytes.NewReader(data), key, readOptions{commitInfo: true}, func(a *Action) error {
		out = append(out, a)
		return nil
	})
	return out, err
}

// lineDecoder yields the actions of one file, a line at a time.
type lineDecoder struct {
	br    *bufio.Reader
	key   string
	opts  readOptions
	line  int   // 1-based number of the line being read
	bytes int64 // bytes consumed so far
}

// next returns the next action, nil for a line that was skipped (a commitInfo not kept, an
// action nothing uses), or io.EOF after the last line.
func (d *lineDecoder) next() (*Action, error) {
	for {
		// Look at what is buffered first: refilling (which slides the rest to the front) is only
		// needed when no whole line is left in it.
		buf, err := d.br.Peek(d.br.Buffered())
		if bytes.IndexByte(buf, '\n') < 0 {
			buf, err = d.br.Peek(logLineBuffer)
		}
		if len(buf) == 0 {
			if err == nil || errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("read %s: %w", d.key, err)
		}
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("read %s: %w", d.key, err)
		}
		end := bytes.IndexByte(buf, '\n')
		switch {
		case end >= 0:
			buf = buf[:end+1]
		case len(buf) == logLineBuffer:
			// Longer than the buffer: stream it.
			return d.streamLine()
		}
		// The line (with its newline, or the file's unterminated last line) is in buf.
		line := d.line
		n := len(buf)
		if len(bytes.TrimSpace(buf)) == 0 {
			d.consume(n)
			continue
		}
		a, err := d.decodeLine(buf, line)
		d.consume(n)
		return a, err
	}
}

func (d *lineDecoder) consume(n int) {
	_, _ = d.br.Discard(n)
	d.bytes += int64(n)
	d.line++
}

// decodeLine decodes one whole line held in memory.
func (d *lineDecoder) decodeLine(b []byte, line int) (*Action, error) {
	if t := bytes.TrimLeft(b, " \t\r"); t[0] != '{' {
		return nil, d.corrupt(line, fmt.Errorf("a line must be one JSON object, found %q", truncateBytes(t, 40)))
	}
	// Nothing reads change data files from the log: like the streaming scanner, check that a cdc
	// action is JSON and no more, so that a line's verdict does not depend on its length.
	var la struct {
		Action
		CDC json.RawMessage `json:"cdc,omitempty"`
	}
	if err := json.Unmarshal(b, &la); err != nil {
		return nil, d.corrupt(line, err)
	}
	a := la.Action
	if !d.opts.commitInfo {
		a.CommitInfo = nil
	}
	return &a, nil
}

func (d *lineDecoder) corrupt(line int, err error) error {
	return fmt.Errorf("%s line %d: invalid action: %w: %w", d.key, line, err, ErrCorruptTable)
}

// streamLine decodes a line too long for the buffer with the streaming scanner.
func (d *lineDecoder) streamLine() (*Action, error) {
	s := &scanner{r: d.br}
	a, err := s.action(d.opts)
	if err == nil {
		err = s.endOfLine()
	}
	d.bytes += s.n
	line := d.line
	d.line++
	if err == nil {
		return a, nil
	}
	var readErr *scanReadError
	if errors.As(err, &readErr) {
		return nil, fmt.Errorf("read %s: %w", d.key, readErr.err)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		err = errors.New("the file ends inside an action")
	}
	return nil, d.corrupt(line, err)
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
