// Package expr is the predicate language of `--where`: comparisons of a column with literals, joined by
// AND. It serves two purposes with one parse: Eval filters rows exactly (SQL semantics: a comparison
// with NULL is never true), and MightMatch skips whole files from their partition values and min/max
// statistics, conservatively — a file is skipped only when no row in it can match.
//
// Grammar (keywords are case-insensitive):
//
//	predicate  = conjunct { AND conjunct }
//	conjunct   = "(" predicate ")" | comparison
//	comparison = column ( op literal | IN "(" literal { "," literal } ")" | IS [NOT] NULL )
//	op         = "=" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	column     = name { "." name }      name = identifier | `back-quoted`
//	literal    = 'string' | number | true | false | NULL
//
// Literals are typed by the column's Delta type when the predicate is bound to a schema: dates are
// 'YYYY-MM-DD', timestamps 'YYYY-MM-DD HH:MM:SS[.ffffff][Z|±hh:mm]' (UTC when no zone is given),
// decimals are exact.
package expr

import (
	"fmt"
	"strings"
	"unicode"
)

// Supported is the one-line summary error messages end with.
const Supported = "supported: col = | != | <> | < | <= | > | >= literal, col IN (literal, …), " +
	"col IS [NOT] NULL, AND, parentheses; literals 'string', numbers, true, false, NULL"

// SyntaxError points at the offending part of a predicate.
type SyntaxError struct {
	Src string
	Pos int // byte offset of the offending token
	Msg string
}

func (e *SyntaxError) Error() string {
	near := e.Src[e.Pos:]
	if len(near) > 20 {
		near = near[:20] + "…"
	}
	where := "at end of input"
	if near != "" {
		where = fmt.Sprintf("at position %d (%q)", e.Pos+1, near)
	}
	return fmt.Sprintf("--where %q: %s: %s (%s)", e.Src, where, e.Msg, Supported)
}

type tokKind int

const (
	tEOF tokKind = iota
	tIdent
	tString
	tNumber
	tOp     // = != <> < <= > >=
	tLParen // (
	tRParen // )
	tComma
	tDot
)

type token struct {
	kind tokKind
	text string // identifier (unquoted), string contents, number text or operator
	pos  int
	// quoted is set for back-quoted identifiers, which are never keywords.
	quoted bool
}

// keyword reports whether t is the unquoted keyword kw.
func (t token) keyword(kw string) bool {
	return t.kind == tIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func lex(src string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(':
			toks = append(toks, token{kind: tLParen, text: "(", pos: i})
			i++
		case c == ')':
			toks = append(toks, token{kind: tRParen, text: ")", pos: i})
			i++
		case c == ',':
			toks = append(toks, token{kind: tComma, text: ",", pos: i})
			i++
		case c == '.' && (i+1 >= len(src) || !isDigit(src[i+1])):
			toks = append(toks, token{kind: tDot, text: ".", pos: i})
			i++
		case c == '=' || c == '<' || c == '>' || c == '!':
			op := string(c)
			if i+1 < len(src) {
				two := src[i : i+2]
				if two == "<=" || two == ">=" || two == "<>" || two == "!=" || two == "==" {
					op = two
				}
			}
			if op == "!" {
				return nil, &SyntaxError{Src: src, Pos: i, Msg: "unexpected '!'"}
			}
			if op == "==" {
				op = "="
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i})
			i += len(op)
			if op == "=" && i < len(src) && src[i] == '=' {
				i++
			}
		case c == '\'':
			s, n, ok := quoted(src[i:], '\'')
			if !ok {
				return nil, &SyntaxError{Src: src, Pos: i, Msg: "unterminated string literal (write a quote inside a string as '')"}
			}
			toks = append(toks, token{kind: tString, text: s, pos: i})
			i += n
		case c == '`':
			s, n, ok := quoted(src[i:], '`')
			if !ok {
				return nil, &SyntaxError{Src: src, Pos: i, Msg: "unterminated back-quoted name"}
			}
			toks = append(toks, token{kind: tIdent, text: s, pos: i, quoted: true})
			i += n
		case isDigit(c) || ((c == '-' || c == '+' || c == '.') && i+1 < len(src) && (isDigit(src[i+1]) || src[i+1] == '.')):
			j := i + 1
			for j < len(src) && (isDigit(src[j]) || src[j] == '.' || src[j] == 'e' || src[j] == 'E' ||
				((src[j] == '-' || src[j] == '+') && (src[j-1] == 'e' || src[j-1] == 'E'))) {
				j++
			}
			toks = append(toks, token{kind: tNumber, text: src[i:j], pos: i})
			i = j
		case c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)):
			j := i
			for j < len(src) && (src[j] == '_' || src[j] >= 0x80 || unicode.IsLetter(rune(src[j])) || isDigit(src[j])) {
				j++
			}
			toks = append(toks, token{kind: tIdent, text: src[i:j], pos: i})
			i = j
		case c == '"':
			return nil, &SyntaxError{Src: src, Pos: i, Msg: "double quotes are not string delimiters: write 'text' for a string or `name` for a column"}
		default:
			return nil, &SyntaxError{Src: src, Pos: i, Msg: fmt.Sprintf("unexpected character %q", c)}
		}
	}
	toks = append(toks, token{kind: tEOF, pos: len(src)})
	return toks, nil
}

// quoted reads a literal delimited by q, where qq stands for one q; it returns the contents and the
// number of bytes consumed.
func quoted(s string, q byte) (string, int, bool) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), i + 1, true
	}
	return "", 0, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
