// Package githubtest is an in-process fake of the parts of GitHub that Akira talks to: the REST operations listed
// in the OpenAPI subset Akira is checked against, the app JWT and installation-token handshake, a GraphQL
// endpoint for the one mutation REST cannot do (marking a draft pull request ready), and git over smart HTTP
// backed by real bare repositories served by `git http-backend`.
//
// It speaks the real protocols so that the real go-github client, ghinstallation and the git CLI can be pointed
// at it. Tests set up state with the Server's methods, drive Akira, then assert on the final state (comments,
// check runs, pull requests, branches and commits) and on the requests Akira sent (Requests).
//
//	gh := githubtest.New(t)
//	repo := gh.CreateRepo("octo", "hello", map[string]string{"ROADMAP.md": "- [ ] task\n"})
//	gh.SetPermission("octo", "hello", "alice", "write")
//	issue := gh.AddIssue("octo", "hello", githubtest.Issue{Title: "Do it", User: "alice"})
//	// Akira config: API URL gh.URL(), app id gh.AppID(), key gh.PrivateKeyPEM().
//	// payload: an issue_comment event for issue.Number with installation.id = repo.InstallationID.
//	req := gh.SignedWebhook(akiraURL+"/webhook", secret, "issue_comment", "delivery-1", payload)
//	// ... then assert on gh.Comments, gh.CheckRuns, gh.PullRequests, gh.Log, gh.Requests.
//
// Requests to /{owner}/{repo}.git/... are git smart HTTP; /graphql is GraphQL; everything else is REST, also
// under the GitHub Enterprise prefix /api/v3.
package githubtest

import (
	"bytes"
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Server is a fake GitHub. All methods are safe for concurrent use.
type Server struct {
	tb      testing.TB // nil when built with NewServer
	ts      *httptest.Server
	root    string // directory holding the bare repositories as <owner>/<name>.git
	ownRoot bool   // root is removed by Close
	ctx     context.Context
	cancel  context.CancelFunc
	mux     *http.ServeMux
	gitBin  string

	appID    int64
	appSlug  string
	key      *rsa.PrivateKey
	keyPEM   []byte
	tokenTTL time.Duration
	clock    func() time.Time
	hook     func(Request)

	mu             sync.Mutex
	closed         bool
	ids            map[string]int64
	users          map[string]*user
	repos          map[string]*repoState // key: lower-case "owner/name"
	installations  map[int64]*installation
	tokens         map[string]*token
	comments       map[int64]*comment
	checkRuns      map[int64]*checkRun
	workflowRuns   map[int64]*workflowRun
	reviews        map[int64]*review
	reviewComments map[int64]*reviewComment
	requested      map[string][]string // "owner/name#number" → logins review was requested from
	manifestCodes  map[string]bool
	manifests      []PostedManifest
	nodes          map[string]nodeRef // GraphQL node id → pull request
	deliveries     []Delivery
	// hookURL and hookSecret are the app's webhook (SetWebhook): where Deliver and redeliveries POST.
	hookURL, hookSecret string
	redeliveries        []int64
	faults              []*faultState
	requests            []Request
	commitClock         int64
	// pushHooks: branch changes are delivered as push webhooks (DeliverPushes); outbox holds those
	// waiting for the lock to be released.
	pushHooks bool
	outbox    []pushDelivery
}

// Option configures a Server.
type Option func(*config)

type config struct {
	appID    int64
	appSlug  string
	keyPEM   []byte
	tokenTTL time.Duration
	clock    func() time.Time
	hook     func(Request)
	root     string
}

// WithAppID sets the GitHub App id (default 4242).
func WithAppID(id int64) Option { return func(c *config) { c.appID = id } }

// WithAppSlug sets the app slug (default "akira-test"); the app's bot user is "<slug>[bot]".
func WithAppSlug(slug string) Option { return func(c *config) { c.appSlug = slug } }

// WithPrivateKey makes the server verify app JWTs against this PEM key instead of a generated one.
func WithPrivateKey(pemBytes []byte) Option { return func(c *config) { c.keyPEM = pemBytes } }

// WithTokenTTL sets the lifetime of issued installation tokens (default one hour). ghinstallation refreshes a
// token one minute before it expires, so a TTL under a minute makes every call mint a fresh token.
func WithTokenTTL(d time.Duration) Option { return func(c *config) { c.tokenTTL = d } }

// WithClock makes the server issue and check installation tokens by clock instead of time.Now, so that a
// test can live through many token lifetimes in seconds (give Akira the same clock). App JWTs are still
// checked by the real time: ghinstallation signs them with it.
func WithClock(clock func() time.Time) Option { return func(c *config) { c.clock = clock } }

// WithRequestHook calls hook with each request once it is answered and recorded, outside the server's
// lock (a test may call the server's methods, or move its clock).
func WithRequestHook(hook func(Request)) Option { return func(c *config) { c.hook = hook } }

// WithRoot stores the bare repositories under dir instead of a fresh temporary directory.
func WithRoot(dir string) Option { return func(c *config) { c.root = dir } }

// New starts a fake GitHub for a test or benchmark and closes it with t.Cleanup. Setup helpers report failures
// with t.Fatalf.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	opts = append([]Option{WithRoot(t.TempDir())}, opts...)
	s, err := NewServer(opts...)
	if err != nil {
		t.Fatalf("githubtest: %v", err)
	}
	s.tb = t
	t.Cleanup(s.Close)
	return s
}

// NewServer starts a fake GitHub outside of a test. The caller must call Close. Setup helpers panic on failure.
func NewServer(opts ...Option) (*Server, error) {
	c := config{appID: 4242, appSlug: "akira-test", tokenTTL: time.Hour, clock: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	gitBin, err := findGit()
	if err != nil {
		return nil, err
	}
	key, keyPEM, err := loadOrSharedKey(c.keyPEM)
	if err != nil {
		return nil, err
	}
	s := &Server{
		gitBin:         gitBin,
		appID:          c.appID,
		appSlug:        c.appSlug,
		key:            key,
		keyPEM:         keyPEM,
		tokenTTL:       c.tokenTTL,
		clock:          c.clock,
		hook:           c.hook,
		root:           c.root,
		ids:            map[string]int64{},
		users:          map[string]*user{},
		repos:          map[string]*repoState{},
		installations:  map[int64]*installation{},
		tokens:         map[string]*token{},
		comments:       map[int64]*comment{},
		checkRuns:      map[int64]*checkRun{},
		workflowRuns:   map[int64]*workflowRun{},
		reviews:        map[int64]*review{},
		reviewComments: map[int64]*reviewComment{},
		requested:      map[string][]string{},
		manifestCodes:  map[string]bool{},
		nodes:          map[string]nodeRef{},
	}
	if s.root == "" {
		dir, err := os.MkdirTemp("", "githubtest-")
		if err != nil {
			return nil, fmt.Errorf("githubtest: temp dir: %w", err)
		}
		s.root, s.ownRoot = dir, true
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.mux = s.restMux()
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s, nil
}

// Close stops the server and removes the repositories it created in its own temporary directory.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.ts.Close()
	s.cancel()
	if s.ownRoot {
		_ = os.RemoveAll(s.root)
	}
}

// URL is the REST base URL with a trailing slash, the value for GITHUB_API_URL and go-github's BaseURL. The
// server also accepts the GitHub Enterprise prefix /api/v3/, so go-github's WithEnterpriseURLs works too.
func (s *Server) URL() string { return s.ts.URL + "/" }

// GraphQLURL is the GraphQL endpoint.
func (s *Server) GraphQLURL() string { return s.ts.URL + "/graphql" }

// Client is an HTTP client for the server with no credentials.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// AppID is the GitHub App id the server expects as the JWT issuer.
func (s *Server) AppID() int64 { return s.appID }

// AppSlug is the app's slug.
func (s *Server) AppSlug() string { return s.appSlug }

// BotLogin is the login of the app's bot user, the author of everything the app creates.
func (s *Server) BotLogin() string { return s.appSlug + "[bot]" }

// PrivateKeyPEM is the app's private key (PKCS#1 PEM), what Akira reads from its key file.
func (s *Server) PrivateKeyPEM() []byte { return bytes.Clone(s.keyPEM) }

func (s *Server) fatalf(format string, args ...any) {
	if s.tb != nil {
		s.tb.Helper()
		s.tb.Fatalf("githubtest: "+format, args...)
		return
	}
	panic(fmt.Sprintf("githubtest: "+format, args...))
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.tb != nil && !closed {
		s.tb.Logf("githubtest: "+format, args...)
	}
}

// nextID hands out ids per kind of object; distinct bases make ids of different kinds easy to tell apart in
// failure messages. Callers hold s.mu.
func (s *Server) nextID(kind string) int64 {
	bases := map[string]int64{
		"user": 5000, "repo": 1000, "installation": 30000, "comment": 100000, "check_run": 200000,
		"check_suite": 300000, "reaction": 400000, "pull": 600000, "token": 0, "delivery": 700000, "issue": 800000,
	}
	if _, ok := s.ids[kind]; !ok {
		s.ids[kind] = bases[kind]
	}
	s.ids[kind]++
	return s.ids[kind]
}

// Request is one request the server received, recorded before fault injection and authentication. Path is the
// API path (an /api/v3 prefix is removed). Bodies of git smart HTTP requests are not kept.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte
	Status int
	// Response is the body of the answer to a REST request (the first MiB), for checking shapes.
	Response []byte
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Fault makes the server fail matching requests Times times before behaving normally again.
type Fault struct {
	Method      string        // empty matches any method
	PathPattern string        // matches when it is a substring of the path or, failing that, a regexp matching it
	Status      int           // e.g. 500, 502, 404; 403 without a Message is a secondary rate limit with Retry-After: 1; 0 with a Delay serves the request normally, late
	Delay       time.Duration // waited before answering: a slow GitHub
	Times       int           // 0 or less means until ClearFaults
	Message     string        // error message in the JSON body; a default is chosen from Status
	Header      http.Header
	// Matched, when set, is called as the fault takes a request, before its Delay: a test learns that
	// the request is in flight (to kill the process that sent it, say).
	Matched func(method, path string)
}

type faultState struct {
	Fault
	re        *regexp.Regexp
	remaining int
}

// InjectFault adds a fault. Faults are checked in the order they were added; the first match is served.
func (s *Server) InjectFault(f Fault) {
	fs := &faultState{Fault: f, remaining: f.Times}
	if re, err := regexp.Compile(f.PathPattern); err == nil {
		fs.re = re
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, fs)
}

// ClearFaults removes all faults.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

func (s *Server) takeFault(method, path string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && !strings.EqualFold(f.Method, method) {
			continue
		}
		if !strings.Contains(path, f.PathPattern) && (f.re == nil || !f.re.MatchString(path)) {
			continue
		}
		if f.Times > 0 {
			f.remaining--
			if f.remaining <= 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		out := f.Fault
		return &out
	}
	return nil
}

func serveFault(w http.ResponseWriter, f *Fault) {
	for k, vs := range f.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	msg, doc := f.Message, docREST
	if msg == "" {
		switch f.Status {
		case http.StatusForbidden:
			msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
			doc = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
			if w.Header().Get("Retry-After") == "" {
				w.Header().Set("Retry-After", "1")
			}
		case http.StatusNotFound:
			msg = "Not Found"
		case http.StatusUnauthorized:
			msg = "Bad credentials"
		default:
			msg = http.StatusText(f.Status)
		}
	}
	writeJSON(w, f.Status, errorBody{Message: msg, DocumentationURL: doc})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	keep   bool // keep the body (REST answers)
	body   bytes.Buffer
}

// maxKeptResponse bounds the answer body a Request keeps.
const maxKeptResponse = 1 << 20

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.keep && r.body.Len() < maxKeptResponse {
		r.body.Write(b[:min(len(b), maxKeptResponse-r.body.Len())])
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets git's streaming responses through.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

var gitPathRE = regexp.MustCompile(`^/([^/]+)/([^/]+)\.git(/.*)?$`)

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, "/api/v3"); ok && (p == "" || p[0] == '/') {
		// Keep the escaped form (an encoded "/" inside a ref, say) for the mux, which matches on it.
		raw := strings.TrimPrefix(r.URL.EscapedPath(), "/api/v3")
		r.URL.Path, r.URL.RawPath = p, raw
	}
	if strings.HasPrefix(r.URL.Path, "/_job-logs/") {
		// Where a job log's redirect leads: storage, not the API (nothing recorded, no token).
		s.serveJobLog(w, r)
		return
	}
	isGit := gitPathRE.MatchString(r.URL.Path)
	rec := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone()}
	if !isGit && r.Body != nil {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "read body", http.StatusBadRequest)
			return
		}
		rec.Body = body
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	sw := &statusRecorder{ResponseWriter: w, keep: !isGit}
	defer func() {
		rec.Status = sw.status
		if sw.body.Len() > 0 {
			rec.Response = bytes.Clone(sw.body.Bytes())
		}
		s.mu.Lock()
		s.requests = append(s.requests, rec)
		s.mu.Unlock()
		if s.hook != nil {
			s.hook(rec)
		}
	}()

	if f := s.takeFault(r.Method, r.URL.Path); f != nil {
		if f.Matched != nil {
			f.Matched(r.Method, r.URL.Path)
		}
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f.Status != 0 {
			serveFault(sw, f)
			return
		}
	}
	switch {
	case isGit:
		s.serveGit(sw, r)
	case r.URL.Path == "/graphql" || r.URL.Path == "/api/graphql":
		s.serveGraphQL(sw, r)
	case r.Method == http.MethodGet:
		serveConditional(sw, r, s.mux)
	default:
		s.mux.ServeHTTP(sw, r)
	}
}

// serveConditional serves a REST read as GitHub does: a 200 carries an ETag (a hash of the body), and
// a request whose If-None-Match names the current one is answered 304 Not Modified with no body, which
// GitHub does not count against the rate limit.
func serveConditional(w http.ResponseWriter, r *http.Request, h http.Handler) {
	buf := &bufferedWriter{header: http.Header{}}
	h.ServeHTTP(buf, r)
	for k, vs := range buf.header {
		w.Header()[k] = vs
	}
	if buf.status == 0 {
		buf.status = http.StatusOK
	}
	if buf.status != http.StatusOK {
		w.WriteHeader(buf.status)
		_, _ = w.Write(buf.body.Bytes())
		return
	}
	sum := sha256.Sum256(buf.body.Bytes())
	etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	w.Header().Set("ETag", etag)
	if etagMatches(r.Header.Get("If-None-Match"), etag) {
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Length")
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.body.Bytes())
}

// etagMatches is If-None-Match's weak comparison: a list of tags, or "*".
func etagMatches(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// bufferedWriter holds a handler's answer until its ETag is known.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

const docREST = "https://docs.github.com/rest"

type errorBody struct {
	Message          string            `json:"message"`
	Errors           []validationError `json:"errors,omitempty"`
	DocumentationURL string            `json:"documentation_url"`
	Status           string            `json:"status,omitempty"`
}

type validationError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, "encode: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Message: msg, DocumentationURL: docREST, Status: fmt.Sprint(status)})
}

// writeInvalid is GitHub's 422 "Validation Failed" with one error entry.
func writeInvalid(w http.ResponseWriter, resource, field, code, msg string) {
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{
		Message:          "Validation Failed",
		Errors:           []validationError{{Resource: resource, Field: field, Code: code, Message: msg}},
		DocumentationURL: docREST,
		Status:           "422",
	})
}

// writeUnprocessable is the other 422 shape GitHub uses, a plain message (the checks API answers limits so).
func writeUnprocessable(w http.ResponseWriter, msg string) {
	writeError(w, http.StatusUnprocessableEntity, msg)
}
