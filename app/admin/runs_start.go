package admin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/akira-bot/akira/jobs/intake"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// Starter starts runs handed off through the API (intake.Controller).
type Starter interface {
	StartHandoff(ctx context.Context, req queue.HandoffRequest, tasks int) (store.Handoff, bool, error)
}

// handoffStore is what starting a run reads besides runs: the handoff records and the repository's
// task durations for the estimate. store.Store has both; a Store without them cannot start runs.
type handoffStore interface {
	Handoff(ctx context.Context, id string) (store.Handoff, error)
	TaskDurations(ctx context.Context, owner, repo string) ([]time.Duration, error)
}

// StartBody is the body of POST /api/v1/runs.
type StartBody struct {
	Repository string              `json:"repository"`
	Base       string              `json:"base"`
	Plan       string              `json:"plan"`
	PlanPath   string              `json:"plan_path"`
	Agent      string              `json:"agent"`
	Budget     float64             `json:"budget"`
	Reference  string              `json:"reference"`
	Notify     map[string][]string `json:"notify"`
	// Issue names an issue the run is for: it runs on the issue's branch and continues its pull
	// request, with the issue's checklist unless plan or plan_path is given.
	Issue int `json:"issue"`
}

// StartResult answers POST /api/v1/runs.
type StartResult struct {
	ID     string `json:"id"`
	URL    string `json:"url"`
	APIURL string `json:"api_url"`
	Branch string `json:"branch"`
	Status string `json:"status"`
	// Repeated says an earlier request with the same Idempotency-Key started this run.
	Repeated  bool      `json:"repeated"`
	Reference string    `json:"reference,omitempty"`
	Estimate  *Estimate `json:"estimate,omitempty"`
	// Error is why the handoff did not become a run (status failed), for a repeated request.
	Error string `json:"error,omitempty"`
}

// Estimate is how long the run may take: its tasks times the repository's median task time.
type Estimate struct {
	Tasks             int     `json:"tasks"`
	MedianTaskSeconds float64 `json:"median_task_seconds"`
	Seconds           float64 `json:"seconds"`
}

// limits of the text a caller hands off.
const (
	maxPlanBytes = 60 << 10
)

// keyTTL is how long an Idempotency-Key is remembered, in words.
var keyTTL = fmt.Sprintf("%g hours", store.HandoffTTL.Hours())

// plainReference keeps a caller's reference plain text wherever it is shown (a pull request's title
// and summary are markdown): 1 to 200 letters, digits, spaces and . _ : / # @ + = -. A loop, not a
// regexp: `[\p{L}\p{N}…]{1,200}` compiles to 200 copies of the Unicode letter table, 7.7 MB
// allocated at every start and about 2 MiB kept for the life of the process.
func plainReference(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > 200 || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsLetter(r) && !unicode.IsNumber(r) && !strings.ContainsRune(" ._:/#@+=-", r) {
			return false
		}
	}
	return true
}

var branchNameBad = []string{" ", "~", "^", ":", "?", "*", "[", "\\", "..", "@{"}

func validBranch(b string) bool {
	if b == "" || len(b) > 200 || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") {
		return false
	}
	for _, bad := range branchNameBad {
		if strings.Contains(b, bad) {
			return false
		}
	}
	for _, r := range b {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// checkStart says what is wrong with a body, as the caller wrote it.
func checkStart(b StartBody) (status int, msg string) {
	switch {
	case !store.ValidRepoName(b.Repository):
		return http.StatusBadRequest, "repository " + strconv.Quote(b.Repository) + " is not owner/name"
	case b.Plan != "" && b.PlanPath != "":
		return http.StatusBadRequest, "give plan or plan_path, not both"
	case b.Issue < 0:
		return http.StatusBadRequest, "issue must be an issue's number"
	case strings.TrimSpace(b.Plan) == "" && b.PlanPath == "" && b.Issue == 0:
		return http.StatusBadRequest, "plan (the plan's text), plan_path (a plan file of the repository) or issue (an issue whose checklist runs) is required"
	case len(b.Plan) > maxPlanBytes:
		return http.StatusRequestEntityTooLarge, "plan is longer than " + strconv.Itoa(maxPlanBytes) + " bytes"
	case b.PlanPath != "" && (strings.HasPrefix(b.PlanPath, "/") || slices.Contains(strings.Split(b.PlanPath, "/"), "..") ||
		strings.ContainsAny(b.PlanPath, "\\\x00") || len(b.PlanPath) > 300):
		return http.StatusBadRequest, "plan_path " + strconv.Quote(b.PlanPath) + " is not a path inside the repository"
	case b.Base != "" && !validBranch(b.Base):
		return http.StatusBadRequest, "base " + strconv.Quote(b.Base) + " is not a branch name"
	case b.Budget < 0:
		return http.StatusBadRequest, "budget must be a positive number of US dollars"
	case b.Reference != "" && !plainReference(b.Reference):
		return http.StatusBadRequest, "reference must be at most 200 letters, digits, spaces and . _ : / # @ + = - (a ticket id or a link)"
	case b.Agent != "" && !validBranch(b.Agent):
		return http.StatusBadRequest, "agent " + strconv.Quote(b.Agent) + " is not a profile name"
	}
	return 0, ""
}

// apiStart starts a run handed off from outside GitHub.
func (s *server) apiStart(c *gin.Context) {
	tok := tokenOf(c)
	if !tok.CanStart() {
		abortJSON(c, http.StatusForbidden, "token %s has scope %s; starting runs needs a start or control token", tok.Name, tok.Scope)
		return
	}
	if s.d.Starter == nil || s.hs == nil {
		abortJSON(c, http.StatusNotImplemented, "this server cannot start runs")
		return
	}
	var body StartBody
	if err := jsonDecoder(c.Request).Decode(&body); err != nil {
		abortJSON(c, http.StatusBadRequest, "the body is not a run to start (repository, plan or plan_path, base, agent, budget, reference, notify): %v", err)
		return
	}
	if status, msg := checkStart(body); status != 0 {
		abortJSON(c, status, "%s", msg)
		return
	}
	if !tok.Allows(body.Repository) {
		abortJSON(c, http.StatusForbidden, "token %s may not start runs on %s", tok.Name, body.Repository)
		return
	}
	tasks := 0
	if body.Plan != "" {
		n, err := intake.CheckPlanText(body.Plan)
		if err != nil {
			abortJSON(c, http.StatusUnprocessableEntity, "the plan cannot be read: %v", err)
			return
		}
		tasks = n
	}
	owner, repo, _ := strings.Cut(body.Repository, "/")
	key := strings.TrimSpace(c.GetHeader("Idempotency-Key"))
	if len(key) > 128 {
		abortJSON(c, http.StatusBadRequest, "Idempotency-Key is longer than 128 characters")
		return
	}
	h, created, err := s.d.Starter.StartHandoff(c, queue.HandoffRequest{Owner: owner, Repo: repo, Base: body.Base, Plan: body.Plan,
		PlanPath: body.PlanPath, Agent: body.Agent, BudgetUSD: body.Budget, Reference: body.Reference, Notify: body.Notify, Issue: body.Issue, Token: tok,
		Key: key, Via: viaOf(c)}, tasks)
	if reused, ok := errors.AsType[*store.KeyReusedError](err); ok {
		abortJSON(c, http.StatusUnprocessableEntity, "Idempotency-Key %q started run %s for a different request in the last %s: "+
			"send the same request to get that run again, or a new key to start another", key, reused.RunID, keyTTL)
		return
	}
	if err != nil {
		s.log.Error("admin: start run", "repo", body.Repository, "token", tok.Name, "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the run could not be queued now; try again")
		return
	}
	s.log.Info("admin: run handed off", "run", h.ID, "repo", h.Repo, "token", tok.Name, "repeated", !created)
	out := StartResult{ID: h.ID, URL: baseURL(c) + "/ui/runs/" + h.ID, APIURL: baseURL(c) + "/api/v1/runs/" + h.ID, Branch: h.Branch,
		Status: string(lifecycle.StatusQueued), Repeated: !created, Reference: h.Reference}
	if run, err := s.d.Store.Get(c, h.ID); err == nil {
		out.Status, out.Branch = string(run.Status), run.Branch
	} else if h.Error != "" {
		out.Status, out.Error = string(lifecycle.StatusFailed), h.Error
	}
	out.Estimate = s.estimate(c, owner, repo, h.Tasks)
	c.JSON(http.StatusAccepted, out)
}

// estimate is the plan's tasks times the repository's median task time; nil without either.
func (s *server) estimate(ctx context.Context, owner, repo string, tasks int) *Estimate {
	if tasks == 0 {
		return nil
	}
	ds, err := s.hs.TaskDurations(ctx, owner, repo)
	if err != nil || len(ds) == 0 {
		return nil
	}
	slices.Sort(ds)
	med := ds[len(ds)/2]
	if len(ds)%2 == 0 {
		med = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
	}
	return &Estimate{Tasks: tasks, MedianTaskSeconds: med.Seconds(), Seconds: float64(tasks) * med.Seconds()}
}

// baseURL is the admin address as the caller reached it.
func baseURL(c *gin.Context) string {
	scheme := "http"
	if c.Request.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + c.Request.Host
}

// handoffDetail is a run handed off that the run job has not created (yet, or ever): queued, or
// failed with the reason.
func handoffDetail(h store.Handoff) RunDetail {
	d := RunDetail{RunSummary: RunSummary{ID: h.ID, Repo: h.Repo, Status: string(lifecycle.StatusQueued), Source: "API", Branch: h.Branch,
		CreatedAt: h.Created, UpdatedAt: h.Created, TasksTotal: h.Tasks}, Tasks: []TaskDetail{}, Parked: []ParkedTask{}}
	if h.Error != "" {
		d.Status, d.Error = string(lifecycle.StatusFailed), h.Error
	}
	return d
}

// visible says the token may see the run: a token limited to repositories sees only theirs, and
// for any other the run does not exist.
func visible(c *gin.Context, repo string) bool {
	if tokenOf(c).Allows(repo) {
		return true
	}
	abortJSON(c, http.StatusNotFound, "no run %s", c.Param("id"))
	return false
}

// apiRunOrHandoff answers GET /runs/{id}: the run, or the handoff that has not become one.
func (s *server) apiRunOrHandoff(c *gin.Context) {
	run, err := s.d.Store.Get(c, c.Param("id"))
	if errors.Is(err, store.ErrNotFound) && s.hs != nil {
		if h, herr := s.hs.Handoff(c, c.Param("id")); herr == nil {
			if visible(c, h.Repo) {
				c.JSON(http.StatusOK, handoffDetail(h))
			}
			return
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		abortJSON(c, http.StatusNotFound, "no run %s", c.Param("id"))
	case err != nil:
		s.log.Error("admin: read run", "run", c.Param("id"), "err", err)
		abortJSON(c, http.StatusServiceUnavailable, "the run cannot be read now")
	case visible(c, run.Owner+"/"+run.Repo):
		c.JSON(http.StatusOK, detailOf(run))
	}
}

// limitToRepos keeps a token limited to repositories out of other repositories' runs: every route
// under /runs/{id} checks the run's repository first.
func (s *server) limitToRepos(c *gin.Context) {
	tok := tokenOf(c)
	if len(tok.Repos) == 0 || c.Param("id") == "" {
		c.Next()
		return
	}
	run, err := s.d.Store.Get(c, c.Param("id"))
	if err == nil && !tok.Allows(run.Owner+"/"+run.Repo) {
		abortJSON(c, http.StatusNotFound, "no run %s", c.Param("id"))
		return
	}
	c.Next()
}

// EscalationBody answers an escalation.
type EscalationBody struct {
	Action   string `json:"action"`
	Guidance string `json:"guidance"`
	// TaskID, when given, must be the escalation's task: a guard against answering another one.
	TaskID string `json:"task_id"`
}

// apiEscalation answers the n-th escalation waiting on a run (1 is the oldest, in the order of the
// run's parked list) the way a reply to its comment would.
func (s *server) apiEscalation(c *gin.Context) {
	tok := tokenOf(c)
	if !tok.CanControl() {
		abortJSON(c, http.StatusForbidden, "token %s has scope %s; answering an escalation needs a control token", tok.Name, tok.Scope)
		return
	}
	n, err := strconv.Atoi(c.Param("n"))
	if err != nil || n < 1 {
		abortJSON(c, http.StatusBadRequest, "escalation %q is not a positive number", c.Param("n"))
		return
	}
	var body EscalationBody
	if err := jsonDecoder(c.Request).Decode(&body); err != nil {
		abortJSON(c, http.StatusBadRequest, "the body is not {\"action\", \"guidance\", \"task_id\"}: %v", err)
		return
	}
	if !slices.Contains([]string{intake.ActionApprove, intake.ActionRetry, intake.ActionSkip, intake.ActionAbort}, body.Action) {
		abortJSON(c, http.StatusBadRequest, "action %q is not one of approve, retry, skip, abort", body.Action)
		return
	}
	if len(body.Guidance) > 4000 || (body.Guidance != "" && body.Action != intake.ActionRetry) {
		abortJSON(c, http.StatusBadRequest, "guidance goes with retry only, at most 4000 characters")
		return
	}
	run := s.runOf(c, true)
	if run == nil {
		return
	}
	if n > len(run.Parked) {
		abortJSON(c, http.StatusConflict, "run %s has %d escalations waiting, not %d", run.ID, len(run.Parked), n)
		return
	}
	task := run.Parked[n-1].TaskID
	if body.TaskID != "" && body.TaskID != task {
		abortJSON(c, http.StatusConflict, "escalation %d of run %s is task %s, not %s", n, run.ID, task, body.TaskID)
		return
	}
	s.control(c, intake.ControlRequest{RunID: run.ID, Action: body.Action, TaskID: task, Guidance: body.Guidance, Token: tok, Via: "API",
		RequestID: requestID(c, tok, run.ID+"-esc-"+task+"-"+body.Action), Answer: true})
}

// viaOf is how a request says it came (akira mcp, akira handoff: remote.ViaHeader), for the audit;
// only the ways Akira's own clients name, anything else being the API's.
func viaOf(c *gin.Context) string {
	switch v := c.GetHeader("X-Akira-Via"); v {
	case store.ViaMCP, store.ViaCLI:
		return v
	}
	return store.ViaAPI
}
