package egress

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/akira-bot/akira/runner/timeline"
)

// What the proxy may hold of model requests to find the model each asks for. It reads a request
// only up to its top-level "model" (Claude Code and Codex send it first), holding what it read
// until it is sent on; a client that puts the conversation first (the OpenAI Python SDK does) makes
// it hold that much. One request may hold maxModelPrefix, a session's requests at once
// maxSessionPrefixes: an agent cannot make the worker hold more.
const (
	maxModelPrefix     = 16 << 20
	maxSessionPrefixes = 32 << 20
)

var (
	errPrefixTooLarge = fmt.Errorf("the request does not name its model within its first %d MiB", maxModelPrefix>>20)
	errPrefixesBusy   = fmt.Errorf("this sandbox's model requests already hold %d MiB that name no model yet: retry", maxSessionPrefixes>>20)
	errEncodedRequest = errors.New("a compressed request body hides the model it asks for: send it uncompressed")
	errNotObject      = errors.New("the request body is not a JSON object")
	errSecondModel    = errors.New(`the request names "model" more than once`)
)

// requestedModel reads the model a call asks for, its top-level "model", and puts what it read
// back in front of the rest of the body: "" for a request without a body (GET /v1/models) or
// without a model. held counts the bytes the session's requests hold until they are sent;
// release lets go of this request's (it is called anyway once they are sent, or the body
// closed). The rest of the body is watched as it goes out: a second "model" key (which a
// provider might read instead of the first) fails the upload before the provider has the request.
func requestedModel(r *http.Request, held *atomic.Int64) (model string, release func(), err error) {
	release = func() {}
	if r.Body == nil || r.Body == http.NoBody {
		return "", release, nil
	}
	if enc := r.Header.Get("Content-Encoding"); enc != "" && enc != "identity" {
		return "", release, errEncodedRequest
	}
	sc := &modelScanner{}
	var prefix []byte
	give := func() { held.Add(-int64(len(prefix))) }
	chunk := make([]byte, 32<<10)
	eof := false
	for !sc.settled() && !eof {
		n, rerr := r.Body.Read(chunk)
		if n > 0 {
			if len(prefix)+n > maxModelPrefix {
				give()
				return "", release, errPrefixTooLarge
			}
			if held.Add(int64(n)) > maxSessionPrefixes {
				held.Add(-int64(n))
				give()
				return "", release, errPrefixesBusy
			}
			prefix = append(prefix, chunk[:n]...)
			sc.feed(chunk[:n])
		}
		switch {
		case errors.Is(rerr, io.EOF):
			eof = true
		case rerr != nil:
			give()
			return "", release, fmt.Errorf("reading the request: %w", rerr)
		}
	}
	switch {
	case sc.notObject || len(prefix) > 0 && sc.depth == 0 && !sc.ended:
		give()
		return "", release, errNotObject
	case sc.keys > 1:
		give()
		return "", release, errSecondModel
	}
	if len(prefix) > 0 {
		b := &heldBody{held: prefix, rest: &watchedBody{sc: sc, body: r.Body}, release: give}
		r.Body, release = b, b.let
	}
	return sc.model, release, nil
}

// heldBody is a request body whose start was read to find its model: the bytes held, then the
// rest. It lets go of them once they are sent.
type heldBody struct {
	held    []byte
	rest    io.ReadCloser
	release func()
	gone    atomic.Bool
}

func (b *heldBody) Read(p []byte) (int, error) {
	if len(b.held) > 0 {
		n := copy(p, b.held)
		b.held = b.held[n:]
		if len(b.held) == 0 {
			b.held = nil
			b.let()
		}
		return n, nil
	}
	return b.rest.Read(p)
}

func (b *heldBody) Close() error {
	b.held = nil
	b.let()
	return b.rest.Close()
}

func (b *heldBody) let() {
	if b.gone.CompareAndSwap(false, true) {
		b.release()
	}
}

// watchedBody is the rest of a request body after its model, read by the scanner on its way out.
type watchedBody struct {
	sc   *modelScanner
	body io.ReadCloser
}

func (w *watchedBody) Read(p []byte) (int, error) {
	n, err := w.body.Read(p)
	w.sc.feed(p[:n])
	if w.sc.keys > 1 {
		return 0, errSecondModel
	}
	return n, err
}

func (w *watchedBody) Close() error { return w.body.Close() }

// modelScanner reads a JSON object fed to it in pieces and finds its top-level "model" keys and
// the first one's string value, keeping nothing but the top-level key it is reading and that
// value: a conversation of any size costs no memory here. It does not check the JSON otherwise:
// the provider does, and refuses what is not JSON.
type modelScanner struct {
	depth     int  // of the next byte: 0 outside the object, 1 at its top level
	inString  bool // inside a string, of any depth
	escaped   bool // after a backslash in a string
	keeping   bool // the string being read is kept: a top-level key, or the model's value
	raw       []byte
	lastKey   string
	expect    byte // at the top level: 'k' a key, ':' its colon, 'v' its value, ',' a comma or the end
	keys      int  // top-level "model" keys seen
	model     string
	valueRead bool // the first "model" key's value is read, whatever it was
	ended     bool // the object's closing brace was read
	notObject bool
}

// settled says the scanner knows the model, or that there is none to know.
func (s *modelScanner) settled() bool { return s.valueRead || s.ended || s.notObject || s.keys > 1 }

func (s *modelScanner) feed(b []byte) {
	for _, c := range b {
		if s.ended || s.notObject {
			return
		}
		s.step(c)
	}
}

func (s *modelScanner) step(c byte) {
	if s.inString {
		if s.keeping {
			s.raw = append(s.raw, c)
		}
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
			if s.depth == 1 {
				s.endString()
			}
		}
		return
	}
	switch c {
	case ' ', '\t', '\n', '\r':
		return
	}
	switch {
	case s.depth == 0:
		if c != '{' {
			s.notObject = true
			return
		}
		s.depth, s.expect = 1, 'k'
	case s.depth > 1:
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			if s.depth--; s.depth == 1 {
				s.value()
			}
		}
	case s.expect == 'k' && c == '"':
		s.inString, s.keeping, s.raw = true, true, append(s.raw[:0], c)
	case s.expect == 'k' || s.expect == ',':
		switch c {
		case ',':
			s.expect = 'k'
		case '}':
			s.depth, s.ended = 0, true
		}
	case s.expect == ':':
		if c == ':' {
			s.expect = 'v'
		}
	case s.expect == 'v':
		switch c {
		case '"':
			s.inString = true
			s.keeping = s.lastKey == "model" && s.keys == 1 && !s.valueRead
			s.raw = append(s.raw[:0], c)
		case '{', '[':
			s.depth++
		default: // a number, true, false or null, read up to the comma
			s.value()
		}
	}
}

// endString ends a string of the top level: a key, or a value.
func (s *modelScanner) endString() {
	var text string
	if s.expect == 'k' {
		s.keeping = false
		s.lastKey = ""
		if json.Unmarshal(s.raw, &text) == nil {
			s.lastKey = text
		}
		if s.lastKey == "model" {
			s.keys++
		}
		s.expect = ':'
		return
	}
	if s.keeping && json.Unmarshal(s.raw, &text) == nil {
		s.model = text
	}
	s.keeping = false
	s.value()
}

// value ends a top-level value.
func (s *modelScanner) value() {
	if s.lastKey == "model" {
		s.valueRead = true
	}
	s.expect = ','
}

// refusal says why the session does not forward a call for model: a model Akira has no price for
// would be recorded at $0. The profile's own model passes (an unpriced one was warned about at
// start, and refused there when a cost budget is set); so does any model when the profile names
// none and no budget is set, since Akira cannot tell the CLI's default from another. Whatever text
// steers the agent (a repository's .claude/agents/*.md or .claude/settings.json, an issue) cannot
// move its calls to a model Akira does not price.
func (s *Session) refusal(model string) string {
	m := s.cfg.Model
	if m.Price == nil || model == "" || model == m.Model {
		return ""
	}
	if _, ok := m.Price(model, Tokens{}); ok {
		return ""
	}
	if m.Model == "" && s.cfg.MaxCostUSD <= 0 {
		return ""
	}
	if m.Model == "" {
		return fmt.Sprintf("akira egress proxy: model %q has no price and this attempt has a cost budget: Akira refuses calls it cannot price (the operator may add the model to prices:)", model)
	}
	return fmt.Sprintf("akira egress proxy: this agent runs %s; model %q is not it and has no price: Akira refuses calls it cannot price (the operator may add the model to prices:)", m.Model, model)
}

// admit answers a call the session does not forward, and says whether it did; release, which the
// caller defers, lets go of what it holds of the request.
func (s *Session) admit(w http.ResponseWriter, r *http.Request) (release func(), ok bool) {
	if s.cfg.Model.Price == nil {
		return func() {}, true // nothing is priced: no model to refuse
	}
	model, release, err := requestedModel(r, &s.prefixes)
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, errPrefixTooLarge):
			status = http.StatusRequestEntityTooLarge
		case errors.Is(err, errPrefixesBusy):
			status = http.StatusTooManyRequests
		}
		s.callRefused(r.Method, r.URL.Path, err.Error())
		modelError(w, s.cfg.Model.Protocol, status, "invalid_request_error", "akira egress proxy: "+err.Error())
		return release, false
	}
	if why := s.refusal(model); why != "" {
		s.p.log.Warn("egress: model call refused", "model", model, "agent_model", s.cfg.Model.Model)
		s.record(timeline.Event{Kind: timeline.KindModelCall, Call: &timeline.ModelCall{Source: timeline.SourceProxy,
			Model: model, Method: r.Method, Path: modelPath(r.URL.Path), Refused: strings.TrimPrefix(why, "akira egress proxy: ")}})
		modelError(w, s.cfg.Model.Protocol, http.StatusForbidden, "permission_error", why)
		return release, false
	}
	return release, true
}
