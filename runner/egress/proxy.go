// Package egress is the proxy that stands between sandboxed commands and the network. It runs in
// Akira's process, outside the sandbox, one per worker; each attempt gets a session of its own (a
// Unix socket bound into the sandbox, or a loopback port when the command shares the host's
// network), so that what a session allows, refuses and meters is that attempt's.
//
// A session proxies plain HTTP and tunnels CONNECT to destinations on its allowlist only. It
// resolves names itself and connects to the very address it checked, so that neither an unlisted
// name nor a listed name that resolves to loopback, link-local (the cloud metadata address),
// private, unique-local or other non-public addresses gets through, unless the operator allowed the
// address by address. What it cannot decide it refuses. Every refusal is recorded for the attempt's
// report.
//
// A session may also hold an agent's model credentials: the sandbox gets a placeholder key and a
// base URL that points at the session, and the session forwards those requests to the real
// endpoint with the real key, reading the usage out of each response (Anthropic Messages, OpenAI
// Chat Completions and Responses, streamed or not) so that CLI agents are metered and priced like
// the built-in ones.
package egress

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/akira-bot/akira/runner/timeline"
)

// The wire protocols of model endpoints a session can hold credentials for.
const (
	ProtocolAnthropic = "anthropic"
	ProtocolOpenAI    = "openai"
)

// Where a sandboxed command reaches its session: the forwarder inside the sandbox listens on
// SandboxAddr and passes every connection to the session's socket, bound at SandboxSocket.
const (
	SandboxPort   = 3128
	SandboxSocket = "/run/akira/egress.sock"
	// ModelPath is the path prefix of the model route: a CLI's base URL is the proxy's address
	// followed by it.
	ModelPath = "/model"
)

// SandboxAddr is the forwarder's address inside the sandbox.
var SandboxAddr = "127.0.0.1:" + strconv.Itoa(SandboxPort)

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer connects to addresses; *net.Dialer is one.
type Dialer interface {
	DialContext(ctx context.Context, network, addr string) (net.Conn, error)
}

// Config is the proxy's.
type Config struct {
	// Dir holds the sessions' Unix sockets; empty means os.TempDir(). Keep it short: a socket's
	// path must fit in 108 bytes.
	Dir string
	// Resolver looks destinations up; nil means net.DefaultResolver.
	Resolver Resolver
	// DialTimeout bounds each connection to a destination (default 30s).
	DialTimeout time.Duration
	// Dialer connects to the address a session decided on; nil means a net.Dialer with
	// DialTimeout. It only ever sees addresses, never names.
	Dialer Dialer
	// DrainTimeout bounds how long a model call goes on once its client has gone, to read the
	// answer to its end for the meter (default 2 minutes); DrainBytes bounds how much of it is
	// read then (default 64 MiB). Past either the call is cut and its usage estimated.
	DrainTimeout time.Duration
	DrainBytes   int64
	// ModelTransport carries model calls to their real endpoints; nil means a clone of
	// http.DefaultTransport. Model endpoints are the operator's, so they are not held to the
	// address rules.
	ModelTransport http.RoundTripper
	Logger         *slog.Logger
}

// Proxy is one worker's egress proxy: it owns the sessions' shared connections and counts, for
// the metrics, what every session allowed and refused.
type Proxy struct {
	cfg     Config
	dialer  Dialer
	forward *http.Transport
	model   http.RoundTripper
	log     *slog.Logger

	mu      sync.Mutex
	allowed map[string]int64
	refused map[string]int64
}

// New returns a proxy; it listens only through the sessions it opens.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 30 * time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 2 * time.Minute
	}
	if cfg.DrainBytes <= 0 {
		cfg.DrainBytes = 64 << 20
	}
	p := &Proxy{cfg: cfg, dialer: cfg.Dialer, log: cfg.Logger, allowed: map[string]int64{}, refused: map[string]int64{}}
	if p.dialer == nil {
		p.dialer = &net.Dialer{Timeout: cfg.DialTimeout}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.model = cfg.ModelTransport
	if p.model == nil {
		p.model = http.DefaultTransport.(*http.Transport).Clone()
	}
	// Plain HTTP through the proxy reaches only the address the session decided on (see dial).
	p.forward = &http.Transport{
		Proxy:                 nil,
		DialContext:           p.dialDecided,
		MaxIdleConns:          32,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
	}
	return p
}

// Counts returns, per destination, how many connections or requests the proxy let through (keyed
// by host name, or by the allowlist entry for a wildcard) and refused (keyed by host), since it
// started: the metrics read them.
func (p *Proxy) Counts() (allowed, refused map[string]int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return clone(p.allowed), clone(p.refused)
}

func clone(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Model is an agent's model endpoint: where its calls really go, with which key, and what the CLI
// inside the sandbox is told instead.
type Model struct {
	// Protocol is ProtocolAnthropic or ProtocolOpenAI: how the key is sent and the usage read.
	Protocol string
	// BaseURL is the real endpoint (https://api.anthropic.com, https://api.openai.com/v1); the
	// path a CLI appends to its base URL is appended to it.
	BaseURL string
	// Key is the real key; it never leaves Akira's process but towards BaseURL. KeyEnv names the
	// variable of Akira's environment that holds it, which the sandbox never passes on.
	Key, KeyEnv string
	// KeyVar and BaseURLVar are the variables the CLI reads its key and base URL from
	// (ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, CODEX_API_KEY and OPENAI_BASE_URL).
	KeyVar, BaseURLVar string
	// Model prices responses that do not name their model.
	Model string
	// Price returns the cost of tokens of a model, ok false when the model has no price.
	Price func(model string, t Tokens) (usd float64, ok bool)
	// ExtraRoutes are calls the route forwards besides MeteredRoutes: the operator's, for a CLI
	// that needs one (ParseRoutes).
	ExtraRoutes []Route
	// ServerTools are the provider-side tools (KnownServerTools) the operator lets the agent's
	// calls use; a call that offers any other is refused.
	ServerTools []string
	// Tariff returns what the price table says of a model besides Price: its tokens at other
	// service tiers, and a use of each server tool (over DefaultToolPrices). nil says nothing.
	Tariff func(model string) Tariff
}

// Host is the model endpoint's host name (or address), for messages.
func (m *Model) Host() string {
	u, err := url.Parse(m.BaseURL)
	if err != nil {
		return m.BaseURL
	}
	return u.Hostname()
}

// SessionConfig is one attempt's.
type SessionConfig struct {
	Allow Allowlist
	// Model, when set, is the agent's model endpoint.
	Model *Model
	// MaxCostUSD, when positive, refuses model calls once the session's calls cost this much.
	MaxCostUSD float64
	// TCP makes the session listen on a loopback port instead of a Unix socket: for commands that
	// share the host's network (sandbox none, network allow), which then are not fenced but still
	// get the model route.
	TCP bool
	// Record, when set, is told each model call as it ends and the first refusal of each
	// destination, for the attempt's timeline (see timeline.go). It is called from the session's
	// goroutines, never with a lock of the session held.
	Record func(timeline.Event)
}

// Blocked is a destination a session refused, with how often and when first. Method and Path are
// set for a call its model route refused: the path as the CLI appended it to its base URL, cleaned
// and escaped.
type Blocked struct {
	Host   string    `json:"host"`
	Port   int       `json:"port"`
	Method string    `json:"method,omitempty"`
	Path   string    `json:"path,omitempty"`
	Count  int       `json:"count"`
	First  time.Time `json:"first"`
	Reason string    `json:"reason"`
	// Fix is what would let it through, when the proxy knows better than an allowlist entry (a
	// model call refused for what its body asks).
	Fix string `json:"fix,omitempty"`
}

// Report is what a session saw.
type Report struct {
	Blocked []Blocked        `json:"blocked,omitempty"`
	Allowed map[string]int64 `json:"allowed,omitempty"`
	// Calls are the model calls metered: those that answered 2xx stating a usage, or that may
	// have made the model generate (every POST but a token count), and those whose client left
	// before an answer came. EstimatedCalls are those among them whose answer did not state the whole call's usage
	// (a stream without its usage, an answer cut short): their tokens are estimated from the bytes
	// of the request and of the answer, and Estimated says the report's tokens and cost hold such
	// an estimate.
	Calls          int     `json:"calls,omitempty"`
	EstimatedCalls int     `json:"estimated_calls,omitempty"`
	Estimated      bool    `json:"estimated,omitempty"`
	Tokens         Tokens  `json:"tokens"`
	CostUSD        float64 `json:"cost_usd,omitempty"`
	// ToolUses are the uses of server tools the answers stated (web_search: 3), priced in CostUSD.
	ToolUses map[string]int64 `json:"tool_uses,omitempty"`
	Models   []string         `json:"models,omitempty"`
	// Unpriced are the models called that have no price: their cost is not counted.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Session is one attempt's route out.
type Session struct {
	p           *Proxy
	cfg         SessionConfig
	ln          net.Listener
	srv         *http.Server
	socket      string
	placeholder string
	upstream    *url.URL
	// upstreamPort is the model endpoint's port, for the report of what its route refused.
	upstreamPort int
	routes       []Route

	// closing ends when Close starts; inflight are the model calls still being metered.
	closing  context.Context
	stop     context.CancelFunc
	inflight sync.WaitGroup
	// rewrites holds a place for each request read whole to be rewritten (see prepareBody).
	rewrites chan struct{}
	// prefixes are the bytes of model requests held to find their model (see requestedModel).
	prefixes atomic.Int64

	mu        sync.Mutex
	closed    bool
	tunnels   map[net.Conn]struct{} // hijacked connections, which srv.Close does not end
	blocked   map[string]*Blocked
	allowed   map[string]int64
	calls     int
	estimated int
	tokens    Tokens
	cost      float64
	toolUses  map[string]int64
	models    []string
	unpriced  []string
}

// Open starts a session.
func (p *Proxy) Open(cfg SessionConfig) (*Session, error) {
	s := &Session{p: p, cfg: cfg, blocked: map[string]*Blocked{}, allowed: map[string]int64{}, tunnels: map[net.Conn]struct{}{},
		rewrites: make(chan struct{}, rewritesInFlight)}
	s.closing, s.stop = context.WithCancel(context.Background())
	if m := cfg.Model; m != nil {
		u, err := url.Parse(m.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("egress: model base URL %q is not an http(s) URL", m.BaseURL)
		}
		if m.Protocol != ProtocolAnthropic && m.Protocol != ProtocolOpenAI {
			return nil, fmt.Errorf("egress: model protocol %q: want anthropic or openai", m.Protocol)
		}
		s.upstream = u
		s.upstreamPort, _ = strconv.Atoi(cmp.Or(u.Port(), map[string]string{"http": "80", "https": "443"}[u.Scheme]))
		s.routes = modelRoutes(m.Protocol, m.ExtraRoutes)
	}
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	s.placeholder = "akira-placeholder-" + hex.EncodeToString(b[:])
	if cfg.TCP {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
		s.ln = ln
	} else {
		dir := p.cfg.Dir
		if dir == "" {
			dir = os.TempDir()
		}
		// The name is random on its own: whoever can list the directory learns nothing of the key.
		var name [8]byte
		if _, err := rand.Read(name[:]); err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
		s.socket = filepath.Join(dir, "akira-egress-"+hex.EncodeToString(name[:])+".sock")
		ln, err := net.Listen("unix", s.socket)
		if err != nil {
			return nil, fmt.Errorf("egress: %w", err)
		}
		// Only Akira's user (which the sandbox runs as) may connect.
		if err := os.Chmod(s.socket, 0o600); err != nil {
			ln.Close()
			return nil, fmt.Errorf("egress: %w", err)
		}
		s.ln = ln
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: time.Minute, ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	go s.srv.Serve(s.ln) //nolint:errcheck // ends with Close
	return s, nil
}

// Socket is the host path of the session's Unix socket ("" for a TCP session).
func (s *Session) Socket() string { return s.socket }

// Addr is the address a command reaches the session at: the sandbox's forwarder, or the loopback
// port of a TCP session.
func (s *Session) Addr() string {
	if s.cfg.TCP {
		return s.ln.Addr().String()
	}
	return SandboxAddr
}

// Placeholder is the key the sandbox holds instead of the real one.
func (s *Session) Placeholder() string { return s.placeholder }

// Env is what a command needs to go through the session: the proxy variables that ordinary
// clients (curl, git, npm, pip, go, cargo) read and, with a model endpoint, the placeholder key
// and the base URL of the model route.
func (s *Session) Env() []string {
	proxy := "http://" + s.Addr()
	env := []string{
		"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy,
		// The model route is the proxy itself: clients must reach it directly, not through itself.
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
	}
	if m := s.cfg.Model; m != nil {
		env = append(env, m.KeyVar+"="+s.placeholder, m.BaseURLVar+"="+proxy+ModelPath)
	}
	return env
}

// Close stops the session, ends its tunnels (a process the attempt left behind keeps none), waits
// for the model calls in flight to be metered (each within the proxy's DrainTimeout), and returns
// its report.
func (s *Session) Close() Report {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	_ = s.srv.Close()
	s.stop()
	s.mu.Lock()
	for c := range s.tunnels {
		c.Close()
	}
	s.mu.Unlock()
	if s.socket != "" {
		_ = os.Remove(s.socket)
	}
	s.inflight.Wait()
	return s.Report()
}

// Report is what the session saw so far; blocked destinations in the order first refused.
func (s *Session) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{Allowed: clone(s.allowed), Calls: s.calls, EstimatedCalls: s.estimated, Estimated: s.estimated > 0,
		Tokens: s.tokens, CostUSD: s.cost, Models: slices.Clone(s.models), Unpriced: slices.Clone(s.unpriced)}
	if len(s.toolUses) > 0 {
		r.ToolUses = clone(s.toolUses)
	}
	for _, b := range s.blocked {
		r.Blocked = append(r.Blocked, *b)
	}
	sort.Slice(r.Blocked, func(i, j int) bool {
		if !r.Blocked[i].First.Equal(r.Blocked[j].First) {
			return r.Blocked[i].First.Before(r.Blocked[j].First)
		}
		a, b := r.Blocked[i], r.Blocked[j]
		return a.Host+strconv.Itoa(a.Port)+a.Method+a.Path < b.Host+strconv.Itoa(b.Port)+b.Method+b.Path
	})
	if len(r.Allowed) == 0 {
		r.Allowed = nil
	}
	return r
}

// Refused is a destination the session would not connect to, or a call its model route would not
// forward (Method and Path set).
type Refused struct {
	Host         string
	Port         int
	Method, Path string
	Reason       string
	Fix          string
}

func (e *Refused) Error() string {
	dest := net.JoinHostPort(e.Host, strconv.Itoa(e.Port))
	if e.Path != "" {
		dest += " " + e.Method + " " + e.Path
	}
	return fmt.Sprintf("egress: %s refused: %s", dest, e.Reason)
}

// decide says which address a connection to host:port may use, or why none. Names not on the
// allowlist are refused before any lookup, so that a name cannot carry data out through DNS.
func (s *Session) decide(ctx context.Context, host string, port int) (netip.AddrPort, string, error) {
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	refuse := func(reason string) (netip.AddrPort, string, error) {
		return netip.AddrPort{}, "", &Refused{Host: host, Port: port, Reason: reason}
	}
	if port < 1 || port > 65535 {
		return refuse("no valid port")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if _, ok := s.cfg.Allow.matchAddr(ip, port); ok {
			return netip.AddrPortFrom(ip, uint16(port)), ip.String(), nil
		}
		if kind := special(ip); kind != "" {
			return refuse(kind + " address")
		}
		return refuse("address not on the allowlist (allow host names, or this address by address)")
	}
	entry, ok := s.cfg.Allow.matchName(host, port)
	if !ok {
		return refuse("not on the allowlist")
	}
	addrs, err := s.p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return refuse("name does not resolve")
	}
	var why []string
	for _, ip := range addrs {
		ip = ip.Unmap()
		if _, ok := s.cfg.Allow.matchAddr(ip, port); ok {
			return netip.AddrPortFrom(ip, uint16(port)), entry, nil
		}
		if kind := special(ip); kind != "" {
			why = append(why, kind+" address "+ip.String())
			continue
		}
		return netip.AddrPortFrom(ip, uint16(port)), entry, nil
	}
	return refuse("resolves to " + strings.Join(why, ", "))
}

// maxBlocked bounds the destinations and calls a session lists as refused: an agent chooses them,
// and could otherwise make the worker hold any number. Past it a refusal is still refused, and
// counted in the proxy's metrics, but not listed.
const maxBlocked = 256

func (s *Session) refused(err error) {
	var r *Refused
	if !errors.As(err, &r) {
		return
	}
	key := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
	if r.Path != "" {
		// A call may be refused for more than one reason (its path, its body): one entry each.
		key += " " + r.Method + " " + r.Path + " " + r.Reason
	}
	s.mu.Lock()
	b, seen := s.blocked[key]
	if seen {
		b.Count++
	} else if len(s.blocked) < maxBlocked {
		s.blocked[key] = &Blocked{Host: r.Host, Port: r.Port, Method: r.Method, Path: r.Path, Count: 1, First: time.Now().UTC(), Reason: r.Reason, Fix: r.Fix}
	}
	s.mu.Unlock()
	if !seen {
		s.destinationRefused(r)
	}
	s.p.mu.Lock()
	countBounded(s.p.refused, r.Host, maxCountedHosts)
	s.p.mu.Unlock()
}

// An agent chooses the destinations it tries (every name under an allowed *.example.com, every
// address of an allowed range, any refused name): the counts kept per destination, the proxy's for
// its whole life and a session's, hold at most so many apart, and count the rest together under
// otherHosts.
const (
	maxCountedHosts = 1024
	maxSessionHosts = 256
	otherHosts      = "(other)"
)

// countBounded counts one more for key in counts, or for otherHosts once counts holds max keys.
func countBounded(counts map[string]int64, key string, max int) {
	if _, ok := counts[key]; !ok && len(counts) >= max {
		key = otherHosts
	}
	counts[key]++
}

// passed counts a connection or request let through; label is what the proxy's metrics count it
// under (see matchName).
func (s *Session) passed(host, label string) {
	s.mu.Lock()
	countBounded(s.allowed, host, maxSessionHosts)
	s.mu.Unlock()
	s.p.mu.Lock()
	countBounded(s.p.allowed, label, maxCountedHosts)
	s.p.mu.Unlock()
}

// ServeHTTP routes a request: CONNECT tunnels, absolute URLs of other hosts are proxied, and what
// is addressed to the session itself is the model route.
func (s *Session) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.Method == http.MethodConnect:
		s.connect(w, r)
	case r.URL.IsAbs() && !s.self(r.URL.Host):
		s.forwardHTTP(w, r)
	case r.URL.Path == ModelPath || strings.HasPrefix(r.URL.Path, ModelPath+"/"):
		// Which call this is, if any, is decided on the path cleaned (routeCall): "/model/../x" is
		// no model call, and refused as one would be.
		s.modelCall(w, r)
	default:
		http.Error(w, "akira egress proxy: use it as an HTTP(S) proxy", http.StatusNotFound)
	}
}

func (s *Session) self(hostport string) bool {
	return hostport == s.Addr() || hostport == SandboxAddr || hostport == "localhost:"+strconv.Itoa(SandboxPort)
}

func splitHostPort(hostport string, defPort int) (string, int, bool) {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		if strings.Contains(err.Error(), "missing port") {
			return hostport, defPort, true
		}
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	return host, n, err == nil
}

func (s *Session) deny(w http.ResponseWriter, err error) {
	var r *Refused
	if errors.As(err, &r) {
		s.refused(err)
		w.Header().Set("X-Akira-Egress", "refused")
		http.Error(w, "akira egress proxy: "+net.JoinHostPort(r.Host, strconv.Itoa(r.Port))+" refused: "+r.Reason+
			" (the operator's sandbox.egress.allow, or network.allow in .github/akira.yml, widens the allowlist)", http.StatusForbidden)
		return
	}
	http.Error(w, "akira egress proxy: "+err.Error(), http.StatusBadGateway)
}

func (s *Session) connect(w http.ResponseWriter, r *http.Request) {
	host, port, ok := splitHostPort(r.Host, 443)
	if !ok {
		s.deny(w, &Refused{Host: r.Host, Reason: "not a host:port"})
		return
	}
	ap, entry, err := s.decide(r.Context(), host, port)
	if err != nil {
		s.deny(w, err)
		return
	}
	up, err := s.p.dialer.DialContext(r.Context(), "tcp", ap.String())
	if err != nil {
		s.deny(w, err)
		return
	}
	s.passed(strings.ToLower(host), entry)
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "akira egress proxy: cannot tunnel over this connection", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !s.track(up, down) {
		up.Close()
		down.Close()
		return
	}
	defer s.untrack(up, down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection Established\r\n\r\n"); err != nil {
		up.Close()
		down.Close()
		return
	}
	// Bytes the client sent after its CONNECT (a TLS hello) may already sit in the buffer.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			up.Close()
			down.Close()
			return
		}
	}
	pipe(up, down)
}

func (s *Session) track(conns ...net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	for _, c := range conns {
		s.tunnels[c] = struct{}{}
	}
	return true
}

func (s *Session) untrack(conns ...net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range conns {
		delete(s.tunnels, c)
	}
}

// pipe copies both ways until both directions end.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

type decidedKey struct{}

// dialDecided dials the address the session decided on for this request, never the name again.
func (p *Proxy) dialDecided(ctx context.Context, network, _ string) (net.Conn, error) {
	ap, ok := ctx.Value(decidedKey{}).(netip.AddrPort)
	if !ok {
		return nil, errors.New("egress: no destination decided")
	}
	return p.dialer.DialContext(ctx, network, ap.String())
}

func (s *Session) forwardHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Scheme != "http" {
		s.deny(w, &Refused{Host: r.URL.Hostname(), Reason: "only http:// is proxied; https goes through CONNECT"})
		return
	}
	host, port, ok := splitHostPort(r.URL.Host, 80)
	if !ok {
		s.deny(w, &Refused{Host: r.URL.Host, Reason: "not a host:port"})
		return
	}
	ap, entry, err := s.decide(r.Context(), host, port)
	if err != nil {
		s.deny(w, err)
		return
	}
	s.passed(strings.ToLower(host), entry)
	_ = http.NewResponseController(w).EnableFullDuplex() // see modelCall
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
		},
		Transport:     s.p.forward,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			http.Error(w, "akira egress proxy: "+err.Error(), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), decidedKey{}, ap)))
}

// modelCall forwards a model API call to the real endpoint with the real key, and meters it. The
// call outlives its client: when the agent hangs up (or is stopped) before the answer ends, the
// proxy reads the answer on to its end, within Config.DrainTimeout and Config.DrainBytes, since the
// provider bills for the whole of it.
func (s *Session) modelCall(w http.ResponseWriter, r *http.Request) {
	m := s.cfg.Model
	if m == nil {
		http.Error(w, "akira egress proxy: this sandbox has no model endpoint", http.StatusNotFound)
		return
	}
	got := r.Header.Get("X-Api-Key")
	if got == "" {
		got = strings.TrimSpace(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}
	if got != s.placeholder {
		s.callRefused(r.Method, modelPath(r.URL.Path), "the request does not carry this sandbox's key")
		modelError(w, m.Protocol, http.StatusUnauthorized, "authentication_error", "akira egress proxy: the request does not carry this sandbox's key")
		return
	}
	route, shown, why := routeCall(s.routes, r.Method, r.URL.Path)
	if r.Header.Get("Upgrade") != "" {
		// What passes over a WebSocket is not metered: the CLI must use HTTP (Codex falls back). The
		// answer is the one Codex falls back on; the attempt's report lists the try.
		s.refused(&Refused{Host: m.Host(), Port: s.upstreamPort, Method: r.Method, Path: shown, Reason: ReasonWebSocket,
			Fix: "nothing: the model route speaks HTTP only (Codex falls back to it by itself)"})
		s.callRefused(r.Method, shown, "a WebSocket: the model route speaks HTTP only")
		w.Header().Set("X-Akira-Egress", "refused")
		modelError(w, m.Protocol, http.StatusNotImplemented, "api_error", "akira egress proxy: the model route speaks HTTP only, not WebSockets")
		return
	}
	if why != "" {
		allowed := make([]string, len(s.routes))
		for i, rt := range s.routes {
			allowed[i] = rt.String()
		}
		s.refuseCall(w, http.StatusForbidden, r.Method, shown, why, fmt.Sprintf(
			"the model route forwards only %s (the operator's api_paths of the agent profile adds more)", strings.Join(allowed, ", ")))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		switch responses := m.Protocol == ProtocolOpenAI && strings.HasSuffix(route, "/responses"); {
		case compressed(r) || responses && !declaredJSON(r):
			// The scanner could not read it as it passes, and so could not tell what it asks for.
			s.refuseCall(w, http.StatusUnsupportedMediaType, r.Method, shown, ReasonUnreadable, "send JSON (Content-Type: application/json), uncompressed")
			return
		case !declaredJSON(r):
			// Read as JSON by the scanner, and so by the provider: no server reads it as a form.
			r.Header.Set("Content-Type", "application/json")
		}
	}
	s.mu.Lock()
	spent, closed := s.cost, s.closed
	if !closed {
		s.inflight.Add(1)
	}
	s.mu.Unlock()
	if closed {
		s.callRefused(r.Method, shown, "the attempt's session is over")
		modelError(w, m.Protocol, http.StatusServiceUnavailable, "api_error", "akira egress proxy: this sandbox's session is over")
		return
	}
	defer s.inflight.Done()
	scan := newBodyScan(m, route, s.cfg.MaxCostUSD > 0)
	release, admitted := s.admit(w, r, scan, r.Method, shown)
	defer release()
	if !admitted {
		return
	}
	if max := s.cfg.MaxCostUSD; max > 0 && spent >= max {
		s.callRefused(r.Method, shown, fmt.Sprintf("the budget of this attempt is spent ($%.4f of $%.4f)", spent, max))
		modelError(w, m.Protocol, http.StatusForbidden, "permission_error",
			fmt.Sprintf("akira egress proxy: the budget of this attempt is spent ($%.4f of $%.4f)", spent, max))
		return
	}
	s.passed(m.Host(), m.Host())
	// The server must leave the request body to the transport: by default it closes the body when the
	// answer starts, and the transport's last read of it (for EOF) then fails and takes the upstream
	// connection, and the rest of the answer, down with it (TestAttemptMeteringThroughTheSandbox
	// caught it about once in ten runs under -race).
	_ = http.NewResponseController(w).EnableFullDuplex() // HTTP/1, as every session serves

	meter := &callMeter{protocol: m.Protocol, generates: r.Method == http.MethodPost && !strings.HasSuffix(route, "/count_tokens"), scan: scan}
	meter.start, meter.method, meter.path = time.Now(), r.Method, shown
	dropUsage, bodyDone, err := s.prepareBody(r, route)
	defer bodyDone()
	if err != nil {
		s.refuseScanned(w, r.Method, shown, scan, err)
		return
	}
	// The call's own context: the client's going does not end it, DrainTimeout after that does.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	var leaving sync.Once
	var answered atomic.Bool
	left := make(chan struct{})
	leave := func() {
		leaving.Do(func() {
			close(left)
			deadline := time.AfterFunc(s.p.cfg.DrainTimeout, cancel)
			context.AfterFunc(ctx, func() { deadline.Stop() })
		})
	}
	defer context.AfterFunc(r.Context(), leave)()
	defer context.AfterFunc(s.closing, leave)()

	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// The path decided on, whatever spelling the client used, and no header some servers
			// read as another method or path.
			pr.Out.URL.Path, pr.Out.URL.RawPath = route, ""
			for _, h := range overrideHeaders {
				pr.Out.Header.Del(h)
			}
			pr.SetURL(s.upstream)
			if pr.Out.Body != nil {
				// Counted as it goes out, for an estimate of the input should the answer state none.
				pr.Out.Body = &countedBody{r: pr.Out.Body, c: pr.Out.Body, n: &meter.request}
			}
			pr.Out.Header.Del("X-Api-Key")
			pr.Out.Header.Del("Authorization")
			// Nor may the placeholder leave in a header of a client's own (Azure's api-key, say).
			for k, vs := range pr.Out.Header {
				if slices.ContainsFunc(vs, func(v string) bool { return strings.Contains(v, s.placeholder) }) {
					delete(pr.Out.Header, k)
				}
			}
			// The transport asks for gzip itself and unpacks it, so the meter reads plain text.
			pr.Out.Header.Del("Accept-Encoding")
			if m.Key != "" {
				if m.Protocol == ProtocolAnthropic {
					pr.Out.Header.Set("X-Api-Key", m.Key)
				} else {
					pr.Out.Header.Set("Authorization", "Bearer "+m.Key)
				}
			}
		},
		Transport:     s.p.model,
		FlushInterval: -1,
		// A client that hangs up mid-answer is routine here, not worth more than a debug line.
		ErrorLog: slog.NewLogLogger(s.p.log.Handler(), slog.LevelDebug),
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode/100 != 2 {
				s.callAnswered(meter, resp.StatusCode, "")
				return nil
			}
			meter.status = resp.StatusCode
			answered.Store(true)
			sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			resp.Body = &meteredBody{body: resp.Body, sse: sse, meter: meter, dropUsage: sse && dropUsage,
				drainBytes: s.p.cfg.DrainBytes, draining: leave, done: s.metered}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if scan.failure() != nil {
				// Cut short before its end: the provider got no request it can act on.
				s.refuseScanned(w, r.Method, shown, scan, err)
				return
			}
			select {
			case <-left:
				if errors.Is(err, context.Canceled) && !answered.Load() {
					// The client went and the answer did not come within the drain's time: the provider
					// may still bill for the input it read, so the call counts, estimated.
					s.metered(meter, false)
				} else {
					s.callAnswered(meter, 0, "the model endpoint did not answer: "+err.Error())
				}
				s.p.log.Warn("egress: a model call its client left did not end in time", "host", m.Host(), "err", err)
			default:
				s.callAnswered(meter, 0, "the model endpoint did not answer: "+err.Error())
				s.p.log.Warn("egress: model call failed", "host", m.Host(), "err", err)
			}
			modelError(w, m.Protocol, http.StatusBadGateway, "api_error", "akira egress proxy: the model endpoint did not answer")
		},
	}
	rp.ServeHTTP(w, r.WithContext(ctx))
}

// refuseCall answers a model call the route does not forward, in the provider's error shape so
// that the CLI shows the agent why, and lists it with the session's refusals.
func (s *Session) refuseCall(w http.ResponseWriter, status int, method, path, why, hint string) {
	m := s.cfg.Model
	s.refused(&Refused{Host: m.Host(), Port: s.upstreamPort, Method: method, Path: path, Reason: why})
	s.callRefused(method, path, why)
	w.Header().Set("X-Akira-Egress", "refused")
	modelError(w, m.Protocol, status, "permission_error", fmt.Sprintf("akira egress proxy: %s %s refused: %s; %s", method, path, why, hint))
}

// refuseBody answers a call refused for what its body asks, and lists it with what would let it
// through.
func (s *Session) refuseBody(w http.ResponseWriter, method, path string, why *refusal) {
	m := s.cfg.Model
	s.refused(&Refused{Host: m.Host(), Port: s.upstreamPort, Method: method, Path: path, Reason: why.reason, Fix: why.fix})
	s.callRefused(method, path, why.reason)
	w.Header().Set("X-Akira-Egress", "refused")
	modelError(w, m.Protocol, http.StatusForbidden, "permission_error", fmt.Sprintf("akira egress proxy: %s %s refused: %s; allow it: %s", method, path, why.reason, why.fix))
}

// refuseScanned answers a call whose body failed on its way (err): refused by the scanner, not a
// request it can read, or unreadable.
func (s *Session) refuseScanned(w http.ResponseWriter, method, path string, scan *bodyScan, err error) {
	m := s.cfg.Model
	switch why := scan.refused.Load(); {
	case why != nil:
		s.refuseBody(w, method, path, why)
	case scan.invalid() != nil:
		s.callRefused(method, path, scan.invalid().Error())
		modelError(w, m.Protocol, http.StatusBadRequest, "invalid_request_error", "akira egress proxy: "+scan.invalid().Error())
	default:
		s.callRefused(method, path, err.Error())
		modelError(w, m.Protocol, http.StatusBadRequest, "invalid_request_error", "akira egress proxy: "+err.Error())
	}
}

// A streamed Chat Completions request is read whole to ask for its usage, when it is at most
// maxRewrittenRequest bytes and fewer than rewritesInFlight others of the session are held so
// (until they are sent): what an agent can make the worker hold stays bounded. A request past
// either goes as it is (its usage, if the answer then states none, is estimated).
const (
	maxRewrittenRequest = 8 << 20
	rewritesInFlight    = 4
)

// prepareBody asks a streamed Chat Completions request for its usage (see askForUsage). It reports
// whether the usage chunk is the proxy's, and returns what to call once the call is over.
func (s *Session) prepareBody(r *http.Request, route string) (dropUsage bool, done func(), err error) {
	done = func() {}
	if r.Body == nil || r.Body == http.NoBody {
		return false, done, nil
	}
	chat := s.cfg.Model.Protocol == ProtocolOpenAI && strings.HasSuffix(route, "/chat/completions")
	if !chat || r.Header.Get("Content-Encoding") != "" || r.ContentLength > maxRewrittenRequest {
		return false, done, nil
	}
	select {
	case s.rewrites <- struct{}{}:
		var once sync.Once
		done = func() { once.Do(func() { <-s.rewrites }) }
	default:
		return false, done, nil
	}
	read, err := io.ReadAll(io.LimitReader(r.Body, maxRewrittenRequest+1))
	if err != nil {
		return false, done, fmt.Errorf("reading the request: %w", err)
	}
	if len(read) > maxRewrittenRequest {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(read), r.Body), r.Body}
		return false, done, nil
	}
	read, dropUsage = askForUsage(read)
	r.Body, r.ContentLength, r.TransferEncoding = &sentOnce{b: read, sent: done}, int64(len(read)), nil
	return dropUsage, done, nil
}

// sentOnce is a request body read once: it lets go of its bytes, and calls sent, once they are
// all read, not when the call (which may stream for minutes) ends.
type sentOnce struct {
	b    []byte
	sent func()
}

func (o *sentOnce) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		o.b = nil
		o.sent()
		return 0, io.EOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

func (o *sentOnce) Close() error { return nil }

// countedBody counts what is read of a request body.
type countedBody struct {
	r io.Reader
	c io.Closer
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.n.Add(int64(n))
	return n, err
}

func (b *countedBody) Close() error { return b.c.Close() }

// metered adds a call's usage to the session's: what the response stated, or an estimate, priced
// at the service tier the response states and with the uses of server tools it states. A cost the
// table cannot price whole (a tier or a tool's use it has no price for, a tool whose uses go
// unstated) makes the call an estimate; a model without a price is listed as unpriced.
func (s *Session) metered(c *callMeter, sse bool) {
	m := s.cfg.Model
	tokens, estimated, ok := c.usage(sse)
	if !ok {
		s.callAnswered(c, c.status, "")
		return
	}
	model := c.model
	if model == "" {
		model = m.Model
	}
	if c.scan != nil && c.scan.unmetered.Load() {
		estimated = true
	}
	usd, priced := 0.0, false
	if tp, ok := m.tariff(model).Tiers[c.tier]; ok && !standardTier(c.tier) {
		usd, priced = tp.cost(tokens), true
	} else if m.Price != nil {
		// A tier the table has no price for is priced at the standard tier's, as an estimate.
		usd, priced = m.Price(model, tokens)
		estimated = estimated || priced && !standardTier(c.tier)
	}
	toolUSD := 0.0
	for tool, n := range c.uses {
		if n == 0 {
			continue
		}
		if each, ok := m.perUse(model, tool); ok {
			toolUSD += float64(n) * each
		} else {
			estimated = true
		}
	}
	s.mu.Lock()
	s.calls++
	if estimated {
		s.estimated++
	}
	s.tokens = s.tokens.Add(tokens)
	for tool, n := range c.uses {
		if n > 0 {
			if s.toolUses == nil {
				s.toolUses = map[string]int64{}
			}
			s.toolUses[tool] += n
		}
	}
	if model != "" && !slices.Contains(s.models, model) {
		s.models = append(s.models, model)
	}
	s.cost += toolUSD
	if priced {
		s.cost += usd
	} else if !slices.Contains(s.unpriced, model) {
		s.unpriced = append(s.unpriced, model)
	}
	s.mu.Unlock()
	s.callMetered(c, model, tokens, usd+toolUSD, priced, estimated, sse)
}

// modelError answers in the error shape of the model's API, so that the CLI shows the message.
func modelError(w http.ResponseWriter, protocol string, status int, kind, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if protocol == ProtocolAnthropic {
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, kind, msg)
		return
	}
	fmt.Fprintf(w, `{"error":{"type":%q,"message":%q,"code":null}}`, kind, msg)
}
