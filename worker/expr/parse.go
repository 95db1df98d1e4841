package expr

import (
	"fmt"
	"strings"
)

// Op is a comparison operator.
type Op string

// Operators.
const (
	Eq        Op = "="
	Ne        Op = "!="
	Lt        Op = "<"
	Le        Op = "<="
	Gt        Op = ">"
	Ge        Op = ">="
	In        Op = "IN"
	IsNull    Op = "IS NULL"
	IsNotNull Op = "IS NOT NULL"
)

type litKind int

const (
	litString litKind = iota
	litNumber
	litBool
	litNull
)

// literal is an untyped literal as written; Bind types it by its column.
type literal struct {
	kind litKind
	text string
	pos  int
}

// Comparison is one term of the conjunction: Column Op Values.
type Comparison struct {
	Column []string // logical path: top-level name, then nested struct fields
	Op     Op
	colPos int
	values []literal // one for = … >=, one or more for IN, none for IS [NOT] NULL
}

// Expr is a parsed, not yet typed predicate: a conjunction of comparisons (parentheses only group,
// since AND is the only connective).
type Expr struct {
	src   string
	terms []Comparison
}

// String returns the predicate as written.
func (e *Expr) String() string { return e.src }

// Columns returns the distinct column paths the predicate references, in order of appearance.
func (e *Expr) Columns() [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, t := range e.terms {
		k := strings.Join(t.Column, "\x00")
		if !seen[k] {
			seen[k] = true
			out = append(out, t.Column)
		}
	}
	return out
}

// Parse parses a predicate. An empty string is an error: callers treat "no --where" separately.
func Parse(src string) (*Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{src: src, toks: toks}
	if p.peek().kind == tEOF {
		return nil, p.errorf(p.peek(), "empty predicate")
	}
	terms, err := p.conjunction()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		if t.keyword("OR") || t.keyword("NOT") {
			return nil, p.errorf(t, "%s is not supported: only AND joins conditions", strings.ToUpper(t.text))
		}
		return nil, p.errorf(t, "expected AND or the end of the predicate")
	}
	return &Expr{src: src, terms: terms}, nil
}

type parser struct {
	src  string
	toks []token
	i    int
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) errorf(t token, format string, args ...any) error {
	return &SyntaxError{Src: p.src, Pos: t.pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) conjunction() ([]Comparison, error) {
	var terms []Comparison
	for {
		more, err := p.conjunct()
		if err != nil {
			return nil, err
		}
		terms = append(terms, more...)
		if !p.peek().keyword("AND") {
			return terms, nil
		}
		p.next()
	}
}

func (p *parser) conjunct() ([]Comparison, error) {
	if p.peek().kind == tLParen {
		open := p.next()
		terms, err := p.conjunction()
		if err != nil {
			return nil, err
		}
		if t := p.peek(); t.kind != tRParen {
			if t.keyword("OR") {
				return nil, p.errorf(t, "OR is not supported: only AND joins conditions")
			}
			return nil, p.errorf(open, "unbalanced parenthesis")
		}
		p.next()
		return terms, nil
	}
	c, err := p.comparison()
	if err != nil {
		return nil, err
	}
	return []Comparison{c}, nil
}

var reserved = map[string]bool{"AND": true, "OR": true, "NOT": true, "IN": true, "IS": true, "NULL": true, "TRUE": true, "FALSE": true}

func (p *parser) comparison() (Comparison, error) {
	t := p.next()
	if t.kind != tIdent || (!t.quoted && reserved[strings.ToUpper(t.text)]) {
		if t.keyword("NOT") {
			return Comparison{}, p.errorf(t, "NOT is not supported; use !=, <> or IS NOT NULL")
		}
		return Comparison{}, p.errorf(t, "expected a column name")
	}
	c := Comparison{Column: []string{t.text}, colPos: t.pos}
	for p.peek().kind == tDot {
		p.next()
		f := p.next()
		if f.kind != tIdent {
			return Comparison{}, p.errorf(f, "expected a field name after '.'")
		}
		c.Column = append(c.Column, f.text)
	}
	op := p.next()
	switch {
	case op.kind == tOp:
		c.Op = Op(op.text)
		if op.text == "<>" {
			c.Op = Ne
		}
		lit, err := p.literal()
		if err != nil {
			return Comparison{}, err
		}
		if lit.kind == litNull {
			return Comparison{}, p.errorf(op, "a comparison with NULL is never true; use IS NULL or IS NOT NULL")
		}
		c.values = []literal{lit}
	case op.keyword("IN"):
		c.Op = In
		if t := p.next(); t.kind != tLParen {
			return Comparison{}, p.errorf(t, "expected '(' after IN")
		}
		for {
			lit, err := p.literal()
			if err != nil {
				return Comparison{}, err
			}
			c.values = append(c.values, lit)
			t := p.next()
			if t.kind == tRParen {
				break
			}
			if t.kind != tComma {
				return Comparison{}, p.errorf(t, "expected ',' or ')' in the IN list")
			}
		}
	case op.keyword("IS"):
		c.Op = IsNull
		if p.peek().keyword("NOT") {
			p.next()
			c.Op = IsNotNull
		}
		if t := p.next(); !t.keyword("NULL") {
			return Comparison{}, p.errorf(t, "expected NULL after IS [NOT]")
		}
	case op.keyword("NOT") || op.keyword("LIKE") || op.keyword("BETWEEN"):
		return Comparison{}, p.errorf(op, "%s is not supported", strings.ToUpper(op.text))
	default:
		return Comparison{}, p.errorf(op, "expected an operator after column %q", strings.Join(c.Column, "."))
	}
	return c, nil
}

func (p *parser) literal() (literal, error) {
	t := p.next()
	switch {
	case t.kind == tString:
		return literal{kind: litString, text: t.text, pos: t.pos}, nil
	case t.kind == tNumber:
		return literal{kind: litNumber, text: t.text, pos: t.pos}, nil
	case t.keyword("TRUE") || t.keyword("FALSE"):
		return literal{kind: litBool, text: strings.ToLower(t.text), pos: t.pos}, nil
	case t.keyword("NULL"):
		return literal{kind: litNull, pos: t.pos}, nil
	case t.kind == tIdent:
		return literal{}, p.errorf(t, "expected a literal; quote strings: '%s'", t.text)
	}
	return literal{}, p.errorf(t, "expected a literal")
}
