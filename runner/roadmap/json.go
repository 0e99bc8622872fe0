package roadmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"
)

// jparser turns already-validated JSON into yaml.Node trees, remembering where each value lies so
// Tick can edit a task object in place. encoding/json does not expose value offsets, and yaml.v3
// rejects some valid JSON (tab indentation), hence this small parser.
type jparser struct {
	data  []byte
	pos   int
	depth int
	spans map[*yaml.Node]*jval

	lineStarts []int
}

// jval is the byte range of a JSON value; objects also list their members.
type jval struct {
	start, end int
	members    []jmember
}

type jmember struct {
	key              string
	keyStart, keyEnd int // keyEnd is after the closing quote
	valStart, valEnd int
}

const maxJSONDepth = 1000

var errJSONDepth = errors.New("nested too deeply")

func (p *jparser) parse() (*yaml.Node, error) {
	n, _, err := p.value()
	return n, err
}

func (p *jparser) ws() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\r', '\n':
			p.pos++
		default:
			return
		}
	}
}

// pos2node makes a node positioned at byte offset start (Column counts bytes).
func (p *jparser) pos2node(kind yaml.Kind, start int) *yaml.Node {
	if p.lineStarts == nil {
		p.lineStarts = []int{0}
		for i, c := range p.data {
			if c == '\n' {
				p.lineStarts = append(p.lineStarts, i+1)
			}
		}
	}
	line := sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > start })
	return &yaml.Node{Kind: kind, Line: line, Column: start - p.lineStarts[line-1] + 1}
}

func (p *jparser) value() (*yaml.Node, *jval, error) {
	p.ws()
	if p.pos >= len(p.data) {
		return nil, nil, errors.New("unexpected end of input")
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, nil, err
		}
		n := p.pos2node(yaml.ScalarNode, start)
		n.Tag, n.Value, n.Style = "!!str", s, yaml.DoubleQuotedStyle
		return n, p.span(n, start), nil
	default:
		for p.pos < len(p.data) {
			c := p.data[p.pos]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
				break
			}
			p.pos++
		}
		raw := string(p.data[start:p.pos])
		n := p.pos2node(yaml.ScalarNode, start)
		n.Value = raw
		switch raw {
		case "true", "false":
			n.Tag = "!!bool"
		case "null":
			n.Tag = "!!null"
		case "":
			return nil, nil, fmt.Errorf("unexpected %q", c)
		default:
			n.Tag = "!!float"
			var i int64
			if json.Unmarshal([]byte(raw), &i) == nil {
				n.Tag = "!!int"
			}
		}
		return n, p.span(n, start), nil
	}
}

func (p *jparser) span(n *yaml.Node, start int) *jval {
	v := &jval{start: start, end: p.pos}
	p.spans[n] = v
	return v
}

func (p *jparser) str() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case '\\':
			p.pos += 2
			continue
		case '"':
			p.pos++
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", fmt.Errorf("bad string: %w", err)
			}
			return s, nil
		}
		p.pos++
	}
	return "", errors.New("unterminated string")
}

func (p *jparser) enter() error {
	p.depth++
	if p.depth > maxJSONDepth {
		return errJSONDepth
	}
	return nil
}

func (p *jparser) object() (*yaml.Node, *jval, error) {
	if err := p.enter(); err != nil {
		return nil, nil, err
	}
	defer func() { p.depth-- }()
	start := p.pos
	n := p.pos2node(yaml.MappingNode, start)
	n.Tag = "!!map"
	n.Style = yaml.FlowStyle
	v := &jval{start: start}
	p.pos++ // {
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.end = p.pos
		p.spans[n] = v
		return n, v, nil
	}
	for {
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, nil, errors.New("expected a key")
		}
		ks := p.pos
		key, err := p.str()
		if err != nil {
			return nil, nil, err
		}
		kn := p.pos2node(yaml.ScalarNode, ks)
		kn.Tag, kn.Value, kn.Style = "!!str", key, yaml.DoubleQuotedStyle
		m := jmember{key: key, keyStart: ks, keyEnd: p.pos}
		p.ws()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, nil, errors.New("expected ':'")
		}
		p.pos++
		p.ws()
		m.valStart = p.pos
		vn, _, err := p.value()
		if err != nil {
			return nil, nil, err
		}
		m.valEnd = p.pos
		v.members = append(v.members, m)
		n.Content = append(n.Content, kn, vn)
		p.ws()
		if p.pos >= len(p.data) {
			return nil, nil, errors.New("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			v.end = p.pos
			p.spans[n] = v
			return n, v, nil
		default:
			return nil, nil, errors.New("expected ',' or '}'")
		}
	}
}

func (p *jparser) array() (*yaml.Node, *jval, error) {
	if err := p.enter(); err != nil {
		return nil, nil, err
	}
	defer func() { p.depth-- }()
	start := p.pos
	n := p.pos2node(yaml.SequenceNode, start)
	n.Tag = "!!seq"
	n.Style = yaml.FlowStyle
	p.pos++ // [
	p.ws()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, p.span(n, start), nil
	}
	for {
		e, _, err := p.value()
		if err != nil {
			return nil, nil, err
		}
		n.Content = append(n.Content, e)
		p.ws()
		if p.pos >= len(p.data) {
			return nil, nil, errors.New("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return n, p.span(n, start), nil
		default:
			return nil, nil, errors.New("expected ',' or ']'")
		}
	}
}
