// Package admin is Akira's operator surface on the admin address (AKIRA_ADMIN_ADDR), never the
// public webhook address: the REST API under /api/v1, the dashboard under /ui, /metrics and pprof.
// Both the API and the dashboard authenticate with the operator's API tokens; control actions go
// through intake.Controller, the same path as the comment commands, and are audited.
package admin

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/internal/cost"
	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/templates"
)

// OpenAPI is the API's description, served at /api/v1/openapi.json.
//
//go:embed openapi.json
var OpenAPI []byte

// Store is what the API and the dashboard read.
type Store interface {
	Runs(ctx context.Context, f store.RunFilter) ([]*lifecycle.Run, error)
	RunsPage(ctx context.Context, f store.RunFilter) (store.RunPage, error)
	Get(ctx context.Context, id string) (*lifecycle.Run, error)
	Log(ctx context.Context, runID, taskID string, attempt int) (string, error)
	Timeline(ctx context.Context, runID, taskID string, attempt int) ([]json.RawMessage, error)
	TokenFor(ctx context.Context, secret string) (store.Token, error)
	TokenByHash(ctx context.Context, hash string) (store.Token, error)
	AuditLog(ctx context.Context, n int) ([]store.AuditEntry, error)
	SpendOf(ctx context.Context, month string) ([]store.SpendRow, error)
	SessionKey(ctx context.Context) ([]byte, error)
}

// Controller carries out control actions (intake.Controller).
type Controller interface {
	Control(ctx context.Context, req intake.ControlRequest) (string, error)
}

// Queue is what the queue views read (asynq's Inspector).
type Queue interface {
	Queues() ([]string, error)
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
	Servers() ([]*asynq.ServerInfo, error)
}

// FairQueue reads the fair gate's line per installation (fair.Gate).
type FairQueue interface {
	Queue(ctx context.Context) (fair.Line, error)
}

// Deps are the admin server's collaborators. Metrics, when set, is served at /metrics.
type Deps struct {
	// MetricsOpen serves /metrics without a token, for a scraper that sends none (the operator's
	// explicit choice: the metrics name installations, repositories' queues and costs). Otherwise
	// /metrics wants a token that covers every repository.
	MetricsOpen bool
	// Pprof serves /debug/pprof, to a control token that covers every repository only: profiles show
	// the process's memory and code paths, and a CPU profile or a trace costs the process while it runs.
	Pprof      bool
	Store      Store
	Controller Controller
	// Starter starts runs handed off through POST /api/v1/runs; the Controller when it can.
	Starter Starter
	Queue   Queue
	// Fair, when set, adds each installation's runs, running and waiting with their position and
	// estimated start, to the queue views.
	Fair    FairQueue
	Metrics http.Handler
	Logger  *slog.Logger
	// SecureCookies marks the session cookie Secure; set it when people reach the dashboard over
	// HTTPS (AKIRA_PUBLIC_URL is https).
	SecureCookies bool
	// Now is the clock of sessions (time.Now when nil).
	Now func() time.Time
}

type server struct {
	d   Deps
	log *slog.Logger
	ui  *template.Template
	// hs reads handoffs (the Store, when it can).
	hs handoffStore

	keyMu sync.Mutex
	key   []byte
}

// NewServer returns the admin handler.
func NewServer(d Deps) (http.Handler, error) {
	if d.Store == nil || d.Controller == nil || d.Queue == nil {
		return nil, errors.New("admin: needs a store, a controller and a queue inspector")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if st, ok := d.Controller.(Starter); ok && d.Starter == nil {
		d.Starter = st
	}
	s := &server{d: d, log: d.Logger}
	s.hs, _ = d.Store.(handoffStore)
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(gin.Recovery())
	r.HandleMethodNotAllowed = true

	api := r.Group("/api/v1")
	api.GET("/openapi.json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json", OpenAPI) })
	authed := api.Group("", s.apiAuth, s.limitToRepos)
	authed.GET("/runs", s.apiRuns)
	authed.POST("/runs", s.apiStart)
	authed.GET("/runs/:id", s.apiRunOrHandoff)
	authed.POST("/runs/:id/escalations/:n", s.apiEscalation)
	authed.GET("/runs/:id/tasks/:task/attempts/:n/log", s.apiLog)
	authed.GET("/runs/:id/tasks/:task/attempts/:n/events", s.apiEvents)
	authed.GET("/queue", s.apiQueue)
	authed.GET("/audit", s.apiAudit)
	authed.GET("/spend", s.apiSpend)
	for _, a := range []string{intake.ActionStop, intake.ActionAbort, intake.ActionRetry, intake.ActionApprove, intake.ActionSkip, intake.ActionPause, intake.ActionResume} {
		authed.POST("/runs/:id/"+a, s.apiControl(a))
	}

	if err := s.routesUI(r); err != nil {
		return nil, err
	}

	if d.Metrics != nil {
		if d.MetricsOpen {
			r.GET("/metrics", gin.WrapH(d.Metrics))
		} else {
			r.GET("/metrics", s.apiAuth, s.operatorOnly("/metrics", false), gin.WrapH(d.Metrics))
		}
	}
	if d.Pprof {
		r.GET("/debug/pprof/*name", s.apiAuth, s.operatorOnly("pprof", true), servePprof)
	}
	r.GET("/", func(c *gin.Context) { c.Redirect(http.StatusFound, "/ui/") })
	return r, nil
}

// operatorOnly lets through a token that covers every repository (what is served is every
// installation's), of scope control when control is set.
func (s *server) operatorOnly(what string, control bool) gin.HandlerFunc {
	return func(c *gin.Context) {
		tok := tokenOf(c)
		switch {
		case len(tok.Repos) > 0:
			abortJSON(c, http.StatusForbidden, "token %s is limited to repositories; %s shows every installation and needs a token for all of them", tok.Name, what)
		case control && !tok.CanControl():
			abortJSON(c, http.StatusForbidden, "token %s has scope %s; %s needs a control token", tok.Name, tok.Scope, what)
		default:
			c.Next()
		}
	}
}

// servePprof serves net/http/pprof's pages under /debug/pprof/.
func servePprof(c *gin.Context) {
	switch name := strings.TrimPrefix(c.Param("name"), "/"); name {
	case "":
		pprof.Index(c.Writer, c.Request)
	case "cmdline":
		pprof.Cmdline(c.Writer, c.Request)
	case "profile":
		pprof.Profile(c.Writer, c.Request)
	case "symbol":
		pprof.Symbol(c.Writer, c.Request)
	case "trace":
		pprof.Trace(c.Writer, c.Request)
	default:
		pprof.Handler(name).ServeHTTP(c.Writer, c.Request)
	}
}

// apiError is the body of every API error.
type apiError struct {
	Error string `json:"error"`
}

func abortJSON(c *gin.Context, status int, format string, a ...any) {
	c.AbortWithStatusJSON(status, apiError{Error: fmt.Sprintf(format, a...)})
}

// apiAuth reads "Authorization: Bearer <token>".
func (s *server) apiAuth(c *gin.Context) {
	secret, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
	if !ok || secret == "" {
		c.Header("WWW-Authenticate", `Bearer realm="akira"`)
		abortJSON(c, http.StatusUnauthorized, "an API token is required: Authorization: Bearer <token>")
		return
	}
	tok, err := s.d.Store.TokenFor(c, strings.TrimSpace(secret))
	if errors.Is(err, store.ErrBadToken) {
		c.Header("WWW-Authenticate", `Bearer realm="akira", error="invalid_token"`)
		abortJSON(c, http.StatusUnauthorized, "the API token is not valid")
		return
	}
	if err != nil {
		abortJSON(c, http.StatusServiceUnavailable, "tokens cannot be checked now")
		return
	}
	c.Set("token", tok)
	c.Next()
}

func tokenOf(c *gin.Context) store.Token {
	t, _ := c.Get("token")
	tok, _ := t.(store.Token)
	return tok
}

// RunSummary is a run in a list.
type RunSummary struct {
	ID         string    `json:"id"`
	Repo       string    `json:"repo"`
	Status     string    `json:"status"`
	Source     string    `json:"source,omitempty"`
	Branch     string    `json:"branch"`
	PRURL      string    `json:"pr_url,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	TasksTotal int       `json:"tasks_total"`
	TasksDone  int       `json:"tasks_done"`
	CostUSD    float64   `json:"cost_usd"`
	// CostEstimated says the cost holds an estimate of the egress proxy's.
	CostEstimated bool `json:"cost_estimated,omitempty"`
	// WaitingOn is the task waiting for a decision, when the run is parked.
	WaitingOn string `json:"waiting_on,omitempty"`
	// Reference is the caller's reference of a run handed off through the API.
	Reference string `json:"reference,omitempty"`
}

// RunDetail is one run with its tasks.
type RunDetail struct {
	RunSummary
	Agent  string       `json:"agent,omitempty"`
	Error  string       `json:"error,omitempty"`
	Tasks  []TaskDetail `json:"tasks"`
	Parked []ParkedTask `json:"parked"`
	// CI is the pull request's own CI, when the run watches it.
	CI *lifecycle.CIWatch `json:"ci,omitempty"`
	// Synced are the base commits the run merged into its branch as its base moved ("<base>@<sha>"),
	// oldest first.
	Synced []string `json:"synced,omitempty"`
}

// TaskDetail is one task of a run.
type TaskDetail struct {
	ID           string  `json:"id"`
	Title        string  `json:"title"`
	Status       string  `json:"status"`
	Attempts     int     `json:"attempts"`
	DurationSecs float64 `json:"duration_seconds"`
	CostUSD      float64 `json:"cost_usd"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	// CostEstimated says the tokens and cost hold an estimate of the egress proxy's (a model
	// answer that did not state its whole usage).
	CostEstimated bool                 `json:"cost_estimated,omitempty"`
	Checkpoint    string               `json:"checkpoint,omitempty"`
	CheckRunURL   string               `json:"check_run_url,omitempty"`
	Judge         *templates.Judgement `json:"judge,omitempty"`
	Logs          []LogLink            `json:"logs"`
	// Blocked are the destinations the egress proxy refused the task.
	Blocked []BlockedDestination `json:"blocked,omitempty"`
}

// BlockedDestination is a destination the egress proxy refused an attempt, and how to allow it;
// Method and Path are set for a call its model route refused.
type BlockedDestination struct {
	Attempt int       `json:"attempt"`
	Who     string    `json:"who"`
	Host    string    `json:"host"`
	Port    int       `json:"port"`
	Method  string    `json:"method,omitempty"`
	Path    string    `json:"path,omitempty"`
	Count   int       `json:"count"`
	First   time.Time `json:"first"`
	Reason  string    `json:"reason"`
	Allow   string    `json:"allow"`
}

// LogLink points at an attempt's log.
type LogLink struct {
	Attempt int    `json:"attempt"`
	URL     string `json:"url"`
}

// ParkedTask is a task waiting for a decision.
type ParkedTask struct {
	TaskID  string    `json:"task_id"`
	Reason  string    `json:"reason,omitempty"`
	Summary string    `json:"summary,omitempty"`
	Since   time.Time `json:"since"`
}

func summaryOf(r *lifecycle.Run) RunSummary {
	s := RunSummary{ID: r.ID, Repo: r.Owner + "/" + r.Repo, Status: string(r.Status), Source: r.Source, Branch: r.Branch,
		PRURL: r.PRURL, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Reference: r.Reference}
	costs := make([]float64, 0, len(r.Tasks))
	for _, t := range r.Tasks {
		switch {
		case lifecycle.IsSyncTask(t.ID):
			// The merge of the base is no task of the plan (its cost counts all the same).
		case t.Checkpoint != "":
			s.TasksDone++
			s.TasksTotal++
		default:
			s.TasksTotal++
		}
		costs = append(costs, t.CostUSD)
		s.CostEstimated = s.CostEstimated || t.UsageEstimated
	}
	// The run's cost is its tasks' costs as each is shown, added up (internal/cost): the pages'
	// columns add up to it.
	s.CostUSD = cost.Sum(costs...)
	if len(r.Parked) > 0 {
		s.WaitingOn = r.Parked[0].TaskID
	}
	return s
}

func detailOf(r *lifecycle.Run) RunDetail {
	d := RunDetail{RunSummary: summaryOf(r), Agent: r.Agent, Error: r.Error, Tasks: []TaskDetail{}, Parked: []ParkedTask{}, Synced: r.Synced}
	for _, t := range r.Tasks {
		td := TaskDetail{ID: t.ID, Title: t.Title, Status: t.Status, Attempts: t.Attempts, DurationSecs: t.Duration.Seconds(),
			CostUSD: t.CostUSD, CostEstimated: t.UsageEstimated, InputTokens: t.InputTokens, OutputTokens: t.OutputTokens, Checkpoint: t.Checkpoint,
			CheckRunURL: t.CheckRunURL, Judge: t.Judgement, Logs: []LogLink{}}
		for _, b := range t.Blocked {
			td.Blocked = append(td.Blocked, BlockedDestination{Attempt: b.Attempt, Who: b.Who, Host: b.Host, Port: b.Port,
				Method: b.Method, Path: b.Path, Count: b.Count, First: b.First, Reason: b.Reason, Allow: b.Allow})
		}
		for n := 1; n <= t.Attempts; n++ {
			td.Logs = append(td.Logs, LogLink{Attempt: n, URL: logPath(r.ID, t.ID, n)})
		}
		d.Tasks = append(d.Tasks, td)
	}
	for _, p := range r.Parked {
		d.Parked = append(d.Parked, ParkedTask{TaskID: p.TaskID, Reason: p.Reason, Summary: p.Summary, Since: p.At})
	}
	if r.CI != nil {
		ci := *r.CI
		ci.Fix = nil // the evidence is for the agent and the escalation, not for every API reader
		d.CI = &ci
	}
	return d
}

func logPath(runID, taskID string, n int) string {
	return "/api/v1/runs/" + runID + "/tasks/" + taskID + "/attempts/" + strconv.Itoa(n) + "/log"
}

// runStatuses are the states a filter may name: the lifecycle's, in its order.
var runStatuses = lifecycle.RunStatuses

// filterOf reads ?repo=owner/name&state=a,b&limit=n&cursor=c.
func filterOf(c *gin.Context) (store.RunFilter, error) {
	f := store.RunFilter{Repo: strings.TrimSpace(c.Query("repo")), Cursor: c.Query("cursor")}
	for _, st := range strings.Split(c.Query("state"), ",") {
		st = strings.TrimSpace(st)
		if st == "" {
			continue
		}
		ok := false
		for _, known := range runStatuses {
			if string(known) == st {
				f.Status, ok = append(f.Status, known), true
			}
		}
		if !ok {
			names := make([]string, len(runStatuses))
			for i, known := range runStatuses {
				names[i] = string(known)
			}
			return f, fmt.Errorf("state %q is not one of %s", st, strings.Join(names, ", "))
		}
	}
	if l := c.Query("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			return f, fmt.Errorf("limit %q is not a number from 1 to 1000", l)
		}
		f.Limit = n
	}
	return f, nil
}

func (s *server) apiRuns(c *gin.Context) {
	f, err := filterOf(c)
	if err != nil {
		abortJSON(c, http.StatusBadRequest, "%v", err)
		return
	}
	f.Allow = tokenOf(c).Allows
	page, err := s.d.Store.RunsPage(c, f)
	if errors.Is(err, store.ErrBadCursor) {
		abortJSON(c, http.StatusBadRequest, "cursor %q is not one a page of runs returned; start again without it", f.Cursor)
		return
	}
	if err != nil {
		s.log.Error("admin: list runs", "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "runs cannot be read now")
		return
	}
	out := struct {
		Runs []RunSummary `json:"runs"`
		Next string       `json:"next,omitempty"`
	}{Runs: []RunSummary{}, Next: page.Next}
	if f.Cursor == "" {
		out.Runs = append(out.Runs, s.pendingHandoffs(c, f)...)
	}
	for _, r := range page.Runs {
		out.Runs = append(out.Runs, summaryOf(r))
	}
	c.JSON(http.StatusOK, out)
}

// pendingLister lists the handoffs no worker has made runs yet (store.Store).
type pendingLister interface {
	PendingHandoffs(ctx context.Context) ([]store.Handoff, error)
}

// pendingHandoffs are the runs the API accepted that are not runs in the store yet, as the first
// page of a listing shows them (newest first, before the runs): a handed-off run is listed from the
// moment it is accepted, queued (or failed, when a worker found it cannot become one). They are
// few (a worker takes them up within seconds), so the page may hold them besides its limit of runs.
func (s *server) pendingHandoffs(c *gin.Context, f store.RunFilter) []RunSummary {
	pl, ok := s.d.Store.(pendingLister)
	if !ok {
		return nil
	}
	hs, err := pl.PendingHandoffs(c)
	if err != nil {
		s.log.Warn("admin: list pending handoffs", "err", err)
		return nil
	}
	var out []RunSummary
	for _, h := range hs {
		sum := handoffDetail(h).RunSummary
		if f.Allow != nil && !f.Allow(h.Repo) || f.Repo != "" && !strings.EqualFold(f.Repo, h.Repo) ||
			len(f.Status) > 0 && !slices.Contains(f.Status, lifecycle.RunStatus(sum.Status)) {
			continue
		}
		out = append(out, sum)
	}
	return out
}

// runOf reads the run of :id, answering 404 or 503 itself.
func (s *server) runOf(c *gin.Context, api bool) *lifecycle.Run {
	run, err := s.d.Store.Get(c, c.Param("id"))
	if errors.Is(err, store.ErrNotFound) {
		if api {
			abortJSON(c, http.StatusNotFound, "no run %s", c.Param("id"))
		} else {
			c.AbortWithStatus(http.StatusNotFound)
		}
		return nil
	}
	if err != nil {
		s.log.Error("admin: read run", "run", c.Param("id"), "err", err)
		if api {
			abortJSON(c, http.StatusServiceUnavailable, "the run cannot be read now")
		} else {
			c.AbortWithStatus(http.StatusServiceUnavailable)
		}
		return nil
	}
	return run
}

// readLog answers with an attempt's log as text, or the error status.
func (s *server) readLog(c *gin.Context) (string, bool) {
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 {
		abortJSON(c, http.StatusBadRequest, "attempt %q is not a positive number", c.Param("n"))
		return "", false
	}
	text, err := s.d.Store.Log(c, c.Param("id"), c.Param("task"), n)
	if errors.Is(err, store.ErrNoLog) {
		abortJSON(c, http.StatusNotFound, "no log of attempt %d of task %s in run %s (never kept, or expired)", n, c.Param("task"), c.Param("id"))
		return "", false
	}
	if err != nil {
		abortJSON(c, http.StatusServiceUnavailable, "the log cannot be read now")
		return "", false
	}
	return text, true
}

// apiEvents answers with an attempt's timeline (package runner/timeline), one JSON object a line,
// in the order the engine recorded them.
func (s *server) apiEvents(c *gin.Context) {
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 {
		abortJSON(c, http.StatusBadRequest, "attempt %q is not a positive number", c.Param("n"))
		return
	}
	run := s.runOf(c, true)
	if run == nil {
		return
	}
	events, err := s.d.Store.Timeline(c, run.ID, c.Param("task"), n)
	if err != nil {
		s.log.Error("admin: read timeline", "run", run.ID, "task", c.Param("task"), "attempt", n, "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the timeline cannot be read now")
		return
	}
	if len(events) == 0 {
		abortJSON(c, http.StatusNotFound, "no timeline of attempt %d of task %s in run %s (never kept, or expired)", n, c.Param("task"), run.ID)
		return
	}
	var b bytes.Buffer
	for _, ev := range events {
		b.Write(ev)
		b.WriteByte('\n')
	}
	c.Data(http.StatusOK, "application/x-ndjson", b.Bytes())
}

func (s *server) apiLog(c *gin.Context) {
	if text, ok := s.readLog(c); ok {
		c.Data(http.StatusOK, "text/plain; charset=utf-8", []byte(text))
	}
}

// QueueState is the queue view.
type QueueState struct {
	Queues  []QueueInfo  `json:"queues"`
	Workers int          `json:"workers"`
	Servers []ServerInfo `json:"servers"`
	// Limited says the token is limited to repositories: queues, workers and servers, which are
	// every installation's, are left out, and installations hold its repositories' runs only.
	Limited bool `json:"limited,omitempty"`
	// Installations is the fair gate's line: per installation its cap, its running runs and its
	// waiting ones in the order they will start, with an estimated start.
	Installations []fair.InstallationQueue `json:"installations"`
}

// QueueInfo is one queue's depth.
type QueueInfo struct {
	Name      string `json:"name"`
	Size      int    `json:"size"`
	Pending   int    `json:"pending"`
	Active    int    `json:"active"`
	Scheduled int    `json:"scheduled"`
	Retry     int    `json:"retry"`
	Archived  int    `json:"archived"`
	Paused    bool   `json:"paused"`
	// OldestPendingSecs is how long the oldest pending task has waited.
	OldestPendingSecs float64 `json:"oldest_pending_seconds"`
}

// Total is the sum of the states the queue page shows, so that its columns add up to it (asynq's
// Size also counts grouped tasks, which Akira does not use).
func (q QueueInfo) Total() int { return q.Pending + q.Active + q.Scheduled + q.Retry + q.Archived }

// ServerInfo is one worker process.
type ServerInfo struct {
	Host          string    `json:"host"`
	PID           int       `json:"pid"`
	Concurrency   int       `json:"concurrency"`
	ActiveWorkers int       `json:"active_workers"`
	Started       time.Time `json:"started"`
	Status        string    `json:"status"`
}

func (s *server) queueState(ctx context.Context, allows func(repo string) bool) (QueueState, error) {
	st := QueueState{Queues: []QueueInfo{}, Servers: []ServerInfo{}, Installations: []fair.InstallationQueue{}}
	if s.d.Fair != nil {
		fq, err := s.d.Fair.Queue(ctx)
		if err != nil {
			return st, err
		}
		st.Installations = fairFor(fq.Installations, allows)
	}
	if allows != nil {
		// The queues' depths and the workers are every installation's: a token limited to
		// repositories sees its own runs in line, nothing of the others' load.
		st.Limited = true
		return st, nil
	}
	names, err := s.d.Queue.Queues()
	if err != nil {
		return st, err
	}
	for _, n := range names {
		qi, err := s.d.Queue.GetQueueInfo(n)
		if err != nil {
			return st, err
		}
		st.Queues = append(st.Queues, QueueInfo{Name: n, Size: qi.Size, Pending: qi.Pending, Active: qi.Active, Scheduled: qi.Scheduled,
			Retry: qi.Retry, Archived: qi.Archived, Paused: qi.Paused, OldestPendingSecs: qi.Latency.Seconds()})
	}
	servers, err := s.d.Queue.Servers()
	if err != nil {
		return st, err
	}
	for _, sv := range servers {
		st.Servers = append(st.Servers, ServerInfo{Host: sv.Host, PID: sv.PID, Concurrency: sv.Concurrency,
			ActiveWorkers: len(sv.ActiveWorkers), Started: sv.Started, Status: sv.Status})
		st.Workers += sv.Concurrency
	}
	return st, nil
}

// fairFor keeps the runs of the repositories a caller may see (a token limited to repositories sees
// only theirs; their position stays the one in the installation's whole line).
func fairFor(insts []fair.InstallationQueue, allows func(repo string) bool) []fair.InstallationQueue {
	if allows == nil {
		return insts
	}
	keep := func(runs []fair.QueuedRun) []fair.QueuedRun {
		out := []fair.QueuedRun{}
		for _, r := range runs {
			if allows(r.Repository) {
				out = append(out, r)
			}
		}
		return out
	}
	out := []fair.InstallationQueue{}
	for _, q := range insts {
		q.Running, q.Waiting = keep(q.Running), keep(q.Waiting)
		if len(q.Running)+len(q.Waiting) > 0 {
			out = append(out, q)
		}
	}
	return out
}

func (s *server) apiQueue(c *gin.Context) {
	var allows func(string) bool
	if tok := tokenOf(c); len(tok.Repos) > 0 {
		allows = tok.Allows
	}
	st, err := s.queueState(c, allows)
	if err != nil {
		s.log.Error("admin: queue", "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the queue cannot be read now")
		return
	}
	c.JSON(http.StatusOK, st)
}

func (s *server) apiAudit(c *gin.Context) {
	entries, err := s.d.Store.AuditLog(c, 200)
	if err != nil {
		abortJSON(c, http.StatusServiceUnavailable, "the audit cannot be read now")
		return
	}
	if tok := tokenOf(c); len(tok.Repos) > 0 {
		// A token limited to repositories reads what was done on them only.
		entries = slices.DeleteFunc(entries, func(e store.AuditEntry) bool { return !tok.Allows(e.Repo) })
	}
	if entries == nil {
		entries = []store.AuditEntry{}
	}
	c.JSON(http.StatusOK, struct {
		Entries []store.AuditEntry `json:"entries"`
	}{entries})
}

// spendOf reads the spend of ?month= (every month when absent), of the token's repositories only.
func (s *server) spendOf(c *gin.Context) ([]store.SpendRow, bool) {
	month := c.Query("month")
	if month != "" {
		if _, err := time.Parse("2006-01", month); err != nil {
			abortJSON(c, http.StatusBadRequest, "month %q is not YYYY-MM", month)
			return nil, false
		}
	}
	rows, err := s.d.Store.SpendOf(c, month)
	if err != nil {
		s.log.Error("admin: read spend", "month", month, "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the spend cannot be read now")
		return nil, false
	}
	if tok := tokenOf(c); len(tok.Repos) > 0 {
		rows = slices.DeleteFunc(rows, func(r store.SpendRow) bool { return !tok.Allows(r.Repo) })
	}
	if rows == nil {
		rows = []store.SpendRow{}
	}
	return rows, true
}

// apiSpend answers with what runs cost by installation, repository and month: JSON, or CSV with
// ?format=csv (a spreadsheet's download).
func (s *server) apiSpend(c *gin.Context) {
	rows, ok := s.spendOf(c)
	if !ok {
		return
	}
	switch c.Query("format") {
	case "", "json":
		var total float64
		for _, r := range rows {
			total += r.CostUSD
		}
		c.JSON(http.StatusOK, struct {
			Rows    []store.SpendRow `json:"rows"`
			CostUSD float64          `json:"cost_usd"`
		}{rows, total})
	case "csv":
		writeSpendCSV(c, rows)
	default:
		abortJSON(c, http.StatusBadRequest, "format %q: json or csv", c.Query("format"))
	}
}

func writeSpendCSV(c *gin.Context, rows []store.SpendRow) {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"month", "installation_id", "repository", "cost_usd"})
	for _, r := range rows {
		_ = w.Write([]string{r.Month, strconv.FormatInt(r.InstallationID, 10), r.Repo, strconv.FormatFloat(r.CostUSD, 'f', 6, 64)})
	}
	w.Flush()
	name := "akira-spend.csv"
	if m := c.Query("month"); m != "" {
		name = "akira-spend-" + m + ".csv"
	}
	c.Header("Content-Disposition", `attachment; filename="`+name+`"`)
	c.Data(http.StatusOK, "text/csv; charset=utf-8", b.Bytes())
}

// ControlBody is the body of a decision (retry, approve, skip); stop and abort take none.
type ControlBody struct {
	TaskID   string `json:"task_id"`
	Guidance string `json:"guidance"`
}

// ControlResult is a control action's answer.
type ControlResult struct {
	Result string `json:"result"`
}

func (s *server) apiControl(action string) gin.HandlerFunc {
	return func(c *gin.Context) {
		tok := tokenOf(c)
		if !tok.CanControl() {
			abortJSON(c, http.StatusForbidden, "token %s has scope %s; %s needs a control token", tok.Name, tok.Scope, action)
			return
		}
		var body ControlBody
		if c.Request.ContentLength != 0 {
			dec := jsonDecoder(c.Request)
			if err := dec.Decode(&body); err != nil {
				abortJSON(c, http.StatusBadRequest, "the body is not {\"task_id\", \"guidance\"}: %v", err)
				return
			}
		}
		if action == intake.ActionRetry && len(body.Guidance) > 4000 {
			abortJSON(c, http.StatusBadRequest, "guidance is longer than 4000 characters")
			return
		}
		now := false
		if action == intake.ActionPause {
			switch c.Query("now") {
			case "", "0", "false":
			case "1", "true":
				now = true
			default:
				abortJSON(c, http.StatusBadRequest, "now=%q is not 1 or 0", c.Query("now"))
				return
			}
		}
		s.control(c, intake.ControlRequest{RunID: c.Param("id"), Action: action, TaskID: body.TaskID, Guidance: body.Guidance,
			Token: tok, Via: "API", RequestID: requestID(c, tok, c.Param("id")+"-"+action), Now: now})
	}
}

// control carries out an API request's action and answers in JSON.
func (s *server) control(c *gin.Context, req intake.ControlRequest) {
	log := s.log.With("run", req.RunID, "action", req.Action, "token", req.Token.Name, "via", req.Via)
	result, err := s.d.Controller.Control(c, req)
	switch {
	case errors.Is(err, store.ErrNotFound):
		abortJSON(c, http.StatusNotFound, "no run %s", req.RunID)
	case errors.Is(err, intake.ErrNotNow):
		abortJSON(c, http.StatusConflict, "%v", err)
	case err != nil:
		log.Error("admin: control action failed", "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the action could not be carried out now; try again")
	default:
		log.Info("admin: control action", "result", result)
		c.JSON(http.StatusAccepted, ControlResult{Result: result})
	}
}

// requestID is the client's Idempotency-Key when it sends one (a retried request then acts once),
// else a fresh id. The key is the token's: another token's same key is another request.
func requestID(c *gin.Context, tok store.Token, scope string) string {
	if k := strings.TrimSpace(c.GetHeader("Idempotency-Key")); k != "" && len(k) <= 128 {
		return "key-" + tok.ID + "-" + scope + "-" + k
	}
	return strconv.FormatInt(time.Now().UnixNano(), 36)
}

// jsonDecoder reads a small JSON body strictly: an unknown field is a mistake worth reporting.
func jsonDecoder(r *http.Request) *json.Decoder {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	return dec
}
