package egress

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
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
)

// compressed says whether a request's body is compressed: the scanner could not read it as it
// passes.
func compressed(r *http.Request) bool {
	enc := r.Header.Get("Content-Encoding")
	return enc != "" && !strings.EqualFold(enc, "identity")
}

// declaredJSON says whether a request's body is not declared a form, which a server might read
// otherwise than as JSON (curl -d declares one). Any other body is read as JSON, as the provider
// reads it whatever its Content-Type says.
func declaredJSON(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt != "application/x-www-form-urlencoded" && !strings.HasPrefix(mt, "multipart/")
}

// hold reads the request's body until the scanner knows the model it asks for (or that it names
// none, or refuses it), and puts what it read back in front of the rest, which the scanner reads
// as it goes out: r.Body is then the client's body, byte for byte, up to the moment the scanner
// refuses it, when it fails before the provider has all of it. held counts the bytes the
// session's requests hold until they are sent; release lets go of this request's (it is called
// anyway once they are sent, or the body closed). A request without a body is left alone.
func (s *bodyScan) hold(r *http.Request, held *atomic.Int64) (release func(), err error) {
	release = func() {}
	if r.Body == nil || r.Body == http.NoBody {
		return release, nil
	}
	if compressed(r) {
		return release, errEncodedRequest
	}
	var prefix []byte
	give := func() { held.Add(-int64(len(prefix))) }
	chunk := make([]byte, 32<<10)
	eof := false
	for !s.settled() && !eof {
		n, rerr := r.Body.Read(chunk)
		if n > 0 {
			if len(prefix)+n > maxModelPrefix {
				give()
				return release, errPrefixTooLarge
			}
			if held.Add(int64(n)) > maxSessionPrefixes {
				held.Add(-int64(n))
				give()
				return release, errPrefixesBusy
			}
			prefix = append(prefix, chunk[:n]...)
			s.feed(chunk[:n])
		}
		switch {
		case errors.Is(rerr, io.EOF):
			eof = true
		case rerr != nil:
			give()
			return release, fmt.Errorf("reading the request: %w", rerr)
		}
	}
	if eof && len(s.stack) == 0 && !s.ended && len(prefix) > 0 {
		s.fail(errNotObject) // nothing but white space
	}
	if err := s.failure(); err != nil {
		give()
		return release, err
	}
	if len(prefix) > 0 {
		b := &heldBody{held: prefix, rest: &scannedBody{scan: s, body: r.Body}, release: give}
		r.Body, release = b, b.let
	}
	return release, nil
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

// scannedBody is the rest of a request body after its model, read by the scanner on its way out.
// The chunk in which the scanner decides to refuse the request never goes: the body fails there,
// short of its end, so that the provider gets nothing it can act on.
type scannedBody struct {
	scan *bodyScan
	body io.ReadCloser
}

func (w *scannedBody) Read(p []byte) (int, error) {
	if err := w.scan.failure(); err != nil {
		return 0, err
	}
	n, err := w.body.Read(p)
	w.scan.feed(p[:n])
	if ferr := w.scan.failure(); ferr != nil {
		return 0, ferr
	}
	return n, err
}

func (w *scannedBody) Close() error { return w.body.Close() }

// refusal says why the session does not forward a call for model: a model Akira has no price for
// would be recorded at $0. The profile's own model passes (an unpriced one was warned about at
// start, and refused there when a cost budget is set); so does any model when the profile names
// none and no budget is set, since Akira cannot tell the CLI's default from another. Whatever text
// steers the agent (a repository's .claude/agents/*.md or .claude/settings.json, an issue) cannot
// move its calls to a model Akira does not price.
func (s *Session) refusal(model string) *refusal {
	m := s.cfg.Model
	if m.Price == nil || model == "" || model == m.Model {
		return nil
	}
	if _, ok := m.Price(model, Tokens{}); ok {
		return nil
	}
	if m.Model == "" && s.cfg.MaxCostUSD <= 0 {
		return nil
	}
	fix := fmt.Sprintf("prices: {%q: {input_per_mtok: …, output_per_mtok: …}} in the operator's configuration", model)
	if m.Model == "" {
		return &refusal{reason: fmt.Sprintf("model %q has no price and this attempt has a cost budget: Akira refuses calls it cannot price", model), fix: fix}
	}
	return &refusal{reason: fmt.Sprintf("this agent runs %s; model %q is not it and has no price: Akira refuses calls it cannot price", m.Model, model), fix: fix}
}

// admit reads what it must of a call's body to decide it, and answers a call the session does not
// forward: a body it cannot read, one that asks for a model Akira has no price for or for
// something the route refuses (the scanner's refusals, listed with the session's). It says whether
// the call goes on; release, which the caller defers, lets go of what it holds of the request.
func (s *Session) admit(w http.ResponseWriter, r *http.Request, scan *bodyScan, method, shown string) (release func(), ok bool) {
	m := s.cfg.Model
	release, err := scan.hold(r, &s.prefixes)
	if why := scan.refused.Load(); why != nil {
		s.refuseBody(w, method, shown, why)
		return release, false
	}
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, errPrefixTooLarge):
			status = http.StatusRequestEntityTooLarge
		case errors.Is(err, errPrefixesBusy):
			status = http.StatusTooManyRequests
		}
		s.callRefused(method, shown, err.Error())
		modelError(w, m.Protocol, status, "invalid_request_error", "akira egress proxy: "+err.Error())
		return release, false
	}
	if why := s.refusal(scan.model); why != nil {
		// Listed with the session's refusals, so the attempt's report says which model was asked for.
		s.p.log.Warn("egress: model call refused", "model", scan.model, "agent_model", m.Model)
		s.refuseBody(w, method, shown, why)
		return release, false
	}
	return release, true
}
