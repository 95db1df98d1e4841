package delta

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// scanner walks one action line straight from the reader, for lines longer than the read buffer.
// encoding/json cannot help there: its Decoder buffers each whole top-level value before decoding
// it, so a 200 MB commitInfo would be held (and copied) whatever is kept of it. The scanner checks
// the JSON structure it walks (matching brackets, terminated strings, valid literals), captures the
// values deltakeeper keeps and hands them to encoding/json, and skips everything else unheld.
type scanner struct {
	r   *bufio.Reader
	n   int64    // bytes consumed
	cap *capture // where consumed bytes go, nil when not capturing
}

// capture collects consumed bytes up to limit; over reports that the value was longer.
type capture struct {
	buf   []byte
	limit int
	over  bool
}

func (c *capture) add(b []byte) {
	if c.over {
		return
	}
	if c.limit > 0 && len(c.buf)+len(b) > c.limit {
		c.over, c.buf = true, nil
		return
	}
	c.buf = append(c.buf, b...)
}

// scanReadError is a failure of the underlying reader (not of the JSON).
type scanReadError struct{ err error }

func (e *scanReadError) Error() string { return e.err.Error() }

// maxScanDepth bounds nesting, as encoding/json does, so that a pathological file cannot exhaust
// the stack.
const maxScanDepth = 10000

var errNewlineInAction = errors.New("the line ends inside an action")

func (s *scanner) readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return &scanReadError{err: err}
}

func (s *scanner) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, s.readErr(err)
	}
	s.n++
	if s.cap != nil {
		s.cap.add([]byte{c})
	}
	return c, nil
}

// peekNonSpace skips blanks (not newlines: an action is one line) and returns the next byte
// without consuming it.
func (s *scanner) peekNonSpace() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return 0, s.readErr(err)
		}
		switch b[0] {
		case ' ', '\t', '\r':
			if _, err := s.readByte(); err != nil {
				return 0, err
			}
		case '\n':
			return 0, errNewlineInAction
		default:
			return b[0], nil
		}
	}
}

// expect consumes the next non-blank byte, which must be one of want.
func (s *scanner) expect(want string) (byte, error) {
	c, err := s.peekNonSpace()
	if err != nil {
		return 0, err
	}
	if strings.IndexByte(want, c) < 0 {
		return 0, fmt.Errorf("unexpected %q at byte %d, want one of %q", c, s.n, want)
	}
	return s.readByte()
}

// stringBody consumes a string after its opening quote, through the closing one, checking its
// escapes and that it holds no control characters, as encoding/json does.
func (s *scanner) stringBody() error {
	hex := 0        // hex digits still expected after \u
	escape := false // the previous byte was an unescaped backslash
	for {
		chunk, err := s.r.ReadSlice('"')
		s.n += int64(len(chunk))
		if s.cap != nil {
			s.cap.add(chunk)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return s.readErr(err)
		}
		for i, c := range chunk {
			switch {
			case hex > 0:
				if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
					return fmt.Errorf("invalid \\u escape in a string at byte %d", s.n-int64(len(chunk)-i))
				}
				hex--
			case escape:
				escape = false
				switch c {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					hex = 4
				default:
					return fmt.Errorf("invalid escape \\%c in a string at byte %d", c, s.n-int64(len(chunk)-i))
				}
			case c == '\\':
				escape = true
			case c == '"':
				return nil // ReadSlice stops at the first quote: this is the end of chunk
			case c == '\n':
				return errNewlineInAction
			case c < 0x20:
				return fmt.Errorf("control character %#x in a string at byte %d", c, s.n-int64(len(chunk)-i))
			}
		}
	}
}

// key reads an object key and returns it decoded; long=true when it was too long to keep (it is
// then consumed but unknown).
func (s *scanner) key() (name string, raw []byte, long bool, err error) {
	outer := s.cap
	c := &capture{limit: 4 << 10}
	s.cap = c
	if _, err = s.expect(`"`); err == nil {
		err = s.stringBody()
	}
	s.cap = outer
	if err != nil {
		return "", nil, false, err
	}
	if outer != nil && !c.over {
		outer.add(c.buf)
	}
	if c.over {
		if outer != nil {
			outer.over, outer.buf = true, nil // cannot be reproduced
		}
		return "", nil, true, nil
	}
	if err := json.Unmarshal(c.buf, &name); err != nil {
		return "", nil, false, fmt.Errorf("object key %s: %w", c.buf, err)
	}
	return name, c.buf, false, nil
}

// value consumes one JSON value (captured when s.cap is set).
func (s *scanner) value(depth int) error {
	if depth > maxScanDepth {
		return fmt.Errorf("nesting deeper than %d", maxScanDepth)
	}
	c, err := s.peekNonSpace()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		if _, err := s.readByte(); err != nil {
			return err
		}
		return s.stringBody()
	case c == '{':
		return s.object(depth, func(string, []byte, bool) error { return s.value(depth + 1) })
	case c == '[':
		if _, err := s.readByte(); err != nil {
			return err
		}
		if c, err := s.peekNonSpace(); err != nil {
			return err
		} else if c == ']' {
			_, err := s.readByte()
			return err
		}
		for {
			if err := s.value(depth + 1); err != nil {
				return err
			}
			if c, err := s.expect(",]"); err != nil || c == ']' {
				return err
			}
		}
	default:
		return s.literal()
	}
}

// object consumes an object, calling field for each key with the scanner at its value, which
// field must consume.
func (s *scanner) object(depth int, field func(name string, raw []byte, long bool) error) error {
	if _, err := s.expect("{"); err != nil {
		return err
	}
	if c, err := s.peekNonSpace(); err != nil {
		return err
	} else if c == '}' {
		_, err := s.readByte()
		return err
	}
	for {
		name, raw, long, err := s.key()
		if err != nil {
			return err
		}
		if _, err := s.expect(":"); err != nil {
			return err
		}
		if long {
			err = s.value(depth + 1)
		} else {
			err = field(name, raw, false)
		}
		if err != nil {
			return err
		}
		if c, err := s.expect(",}"); err != nil || c == '}' {
			return err
		}
	}
}

// literal consumes true, false, null or a number.
func (s *scanner) literal() error {
	var lit []byte
	for {
		b, err := s.r.Peek(1)
		if err != nil && !errors.Is(err, io.EOF) {
			return s.readErr(err)
		}
		if len(b) == 0 || !isLiteralByte(b[0]) {
			break
		}
		c, _ := s.readByte()
		if len(lit) > 1024 {
			return fmt.Errorf("a literal longer than 1 KiB at byte %d", s.n)
		}
		lit = append(lit, c)
	}
	if len(lit) == 0 || !json.Valid(lit) {
		if len(lit) == 0 {
			if b, err := s.r.Peek(1); err == nil {
				return fmt.Errorf("unexpected %q at byte %d", b[0], s.n)
			}
			return io.ErrUnexpectedEOF
		}
		return fmt.Errorf("invalid literal %q at byte %d", lit, s.n)
	}
	return nil
}

func isLiteralByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.'
}

// captured consumes a value and returns its bytes (limit 0: unlimited); over=true when it was
// longer than limit and so was consumed without being kept.
func (s *scanner) captured(depth, limit int) (val []byte, over bool, err error) {
	c := &capture{limit: limit}
	s.cap = c
	err = s.value(depth)
	s.cap = nil
	return c.buf, c.over, err
}

// action consumes one action object.
func (s *scanner) action(opts readOptions) (*Action, error) {
	a := &Action{}
	err := s.object(0, func(name string, _ []byte, _ bool) error {
		var dst any
		switch strings.ToLower(name) {
		case "commitinfo":
			if !opts.commitInfo {
				return s.value(1)
			}
			ci, err := s.commitInfo()
			if err == nil {
				a.CommitInfo = ci
			}
			return err
		case "add":
			dst = &a.Add
		case "remove":
			dst = &a.Remove
		case "metadata":
			dst = &a.MetaData
		case "protocol":
			dst = &a.Protocol
		case "txn":
			dst = &a.Txn
		case "domainmetadata":
			dst = &a.DomainMetadata
		case "sidecar":
			dst = &a.Sidecar
		case "checkpointmetadata":
			dst = &a.CheckpointMetadata
		default:
			return s.value(1) // cdc, and actions this version does not know
		}
		val, _, err := s.captured(1, 0)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(val, dst); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	})
	return a, err
}

// commitInfo reads a commitInfo object field by field, keeping each field up to
// commitInfoFieldLimit, and decodes what was kept as CommitInfo.UnmarshalJSON would the whole.
func (s *scanner) commitInfo() (*CommitInfo, error) {
	if c, err := s.peekNonSpace(); err != nil {
		return nil, err
	} else if c != '{' {
		val, _, err := s.captured(1, 1024)
		if err != nil {
			return nil, err
		}
		if bytes.Equal(bytes.TrimSpace(val), []byte("null")) {
			return nil, nil
		}
		return nil, fmt.Errorf("commitInfo is not an object")
	}
	kept := []byte{'{'}
	err := s.object(1, func(_ string, raw []byte, _ bool) error {
		val, over, err := s.captured(2, commitInfoFieldLimit)
		if err != nil || over {
			return err
		}
		if len(kept) > 1 {
			kept = append(kept, ',')
		}
		kept = append(append(append(kept, raw...), ':'), val...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ci := &CommitInfo{}
	if err := ci.UnmarshalJSON(append(kept, '}')); err != nil {
		return nil, fmt.Errorf("commitInfo: %w", err)
	}
	return ci, nil
}

// endOfLine consumes blanks up to and including the newline that ends the action's line (or the
// end of the file).
func (s *scanner) endOfLine() error {
	for {
		c, err := s.r.ReadByte()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &scanReadError{err: err}
		}
		s.n++
		switch c {
		case '\n':
			return nil
		case ' ', '\t', '\r':
		default:
			return fmt.Errorf("unexpected %q after the action at byte %d", c, s.n)
		}
	}
}
