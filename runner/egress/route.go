package egress

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
)

// MeteredRoutes are the calls the model route forwards for each protocol, as "METHOD /path"
// relative to the endpoint's base URL (the path a CLI appends to its base URL: Anthropic's base
// has no /v1, OpenAI's has): the calls whose answers state the tokens they cost (messages, chat
// completions, responses), and those that cost nothing and show nothing of the account but
// models (token counts, the model list). Everything else a provider offers with the same key
// (images, audio, embeddings, files, batches, fine-tuning, vector stores, assistants, realtime,
// the admin and organisation APIs) would spend money the meter cannot see, or reach the account's
// data, so it is refused. A "*" stands for one path segment (a model's name).
//
// The pinned CLIs ask for nothing else (TestRealAgentsModelRoute): Claude Code for POST
// /v1/messages?beta=true, Codex for POST /responses, its compaction included (after a WebSocket
// upgrade on GET /responses, which the route refuses apart since it could not be metered).
var MeteredRoutes = map[string][]string{
	ProtocolAnthropic: {"POST /v1/messages", "POST /v1/messages/count_tokens", "GET /v1/models", "GET /v1/models/*"},
	ProtocolOpenAI:    {"POST /chat/completions", "POST /responses", "GET /models", "GET /models/*"},
}

// Route is one call the model route forwards: a method and a path, some of whose segments may be
// "*".
type Route struct {
	method string
	segs   []string
}

func (r Route) String() string { return r.method + " /" + strings.Join(r.segs, "/") }

// ParseRoutes reads routes written "METHOD /path" (POST /v1/messages/batches, GET /v1/models/*),
// the way an operator adds to MeteredRoutes for a CLI that needs more. A path is clean (no "."
// or ".." segment, no empty segment, no trailing slash) and its segments are a literal of letters,
// digits and ._:@~- or "*" for any one such segment: no escapes, no ";" parameters, no query.
func ParseRoutes(lines []string) ([]Route, error) {
	var routes []Route
	var errs []error
	for _, line := range lines {
		r, err := parseRoute(line)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		routes = append(routes, r)
	}
	return routes, errors.Join(errs...)
}

func parseRoute(line string) (Route, error) {
	method, p, ok := strings.Cut(strings.TrimSpace(line), " ")
	p = strings.TrimSpace(p)
	if !ok || method == "" || p == "" {
		return Route{}, fmt.Errorf("route %q: want METHOD /path, e.g. \"POST /v1/messages/batches\"", line)
	}
	if strings.Trim(method, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "" {
		return Route{}, fmt.Errorf("route %q: method %q is not an upper-case HTTP method", line, method)
	}
	if !strings.HasPrefix(p, "/") || p == "/" || path.Clean(p) != p {
		return Route{}, fmt.Errorf("route %q: path %q is not a clean absolute path (no ., .., // or trailing /)", line, p)
	}
	segs := strings.Split(p[1:], "/")
	for _, s := range segs {
		if s != "*" && !segmentOK(s) {
			return Route{}, fmt.Errorf("route %q: segment %q: only letters, digits and ._:@~- (or * for one segment)", line, s)
		}
	}
	return Route{method: method, segs: segs}, nil
}

// segmentOK says whether a path segment is plain: what a model's name or an API's path is made of,
// nothing a server could read as an escape, a parameter or a step up.
func segmentOK(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("._:@~-", c) >= 0:
		default:
			return false
		}
	}
	return true
}

func (r Route) match(method string, segs []string) bool {
	if method != r.method || len(segs) != len(r.segs) {
		return false
	}
	for i, s := range r.segs {
		if s == "*" {
			if !segmentOK(segs[i]) {
				return false
			}
		} else if s != segs[i] {
			return false
		}
	}
	return true
}

// modelRoutes are the routes of a protocol, with the operator's extra ones.
func modelRoutes(protocol string, extra []Route) []Route {
	routes, err := ParseRoutes(MeteredRoutes[protocol])
	if err != nil {
		panic(err) // MeteredRoutes is a constant of this package: TestMeteredRoutesParse
	}
	return append(routes, extra...)
}

// Why the model route refuses a call, as its report says.
const (
	ReasonUnmetered = "not a model call Akira meters"
	ReasonOffRoute  = "the path leaves the model route"
)

// overrideHeaders are headers some servers and frameworks in front of them read as the request's
// real method or path: the model route never passes them on, so that the call the provider serves
// is the one the route decided on.
var overrideHeaders = []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
	"X-Original-Url", "X-Rewrite-Url", "X-Original-Uri", "X-Forwarded-Prefix", "X-Forwarded-Path"}

// maxShownPath bounds what a refusal records of a path: an agent chooses it.
const maxShownPath = 256

// routeCall decides a model call: the path the session forwards, relative to the endpoint's base
// URL, or why it refuses. The decision is on the path cleaned (escapes decoded, "." and ".."
// resolved, empty segments and a trailing slash dropped), and what is forwarded is that path and
// nothing else, so that no spelling the provider (or a CDN in front of it) would resolve
// differently gets past the rules. shown is the path as the refusal records it: cleaned, escaped
// and bounded.
func routeCall(routes []Route, method, requested string) (forward, shown string, refusal string) {
	cleaned := path.Clean("/" + requested)
	shown = (&url.URL{Path: cleaned}).EscapedPath()
	if len(shown) > maxShownPath {
		shown = shown[:maxShownPath] + "…"
	}
	rest, ok := strings.CutPrefix(cleaned, ModelPath)
	if !ok || (rest != "" && rest[0] != '/') {
		// Above the route's base: shown as the climb it is, never as a path of the endpoint.
		return "", "/.." + shown, ReasonOffRoute
	}
	shown = cmp.Or(strings.TrimPrefix(shown, ModelPath), "/")
	segs := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	if slices.ContainsFunc(routes, func(r Route) bool { return r.match(method, segs) }) {
		return rest, shown, ""
	}
	return "", shown, ReasonUnmetered
}
