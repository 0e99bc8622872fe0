package githubtest

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// A pull request's own CI, as other apps report it on a commit: their check runs (GitHub Actions
// among them: each job of a workflow run is a check run whose id is the job's), commit statuses, and
// Actions' workflow runs with their jobs and logs. Tests play the CI: they add what it reports with
// the helpers below, and the REST routes serve it as GitHub does.

// CIApp is another GitHub App that reports check runs.
type CIApp struct {
	ID   int64
	Slug string
	Name string
}

// ActionsApp is GitHub Actions as it appears on its check runs.
var ActionsApp = CIApp{ID: 15368, Slug: "github-actions", Name: "GitHub Actions"}

// ForeignCheckRun is a check run another app reports on a commit.
type ForeignCheckRun struct {
	App                          CIApp
	Name, HeadSHA, HeadBranch    string
	Status, Conclusion           string // Status defaults to completed when Conclusion is set, else queued
	Title, Summary, Text         string
	DetailsURL                   string
	Annotations                  []Annotation
	workflowRunID, workflowJobID int64
}

// Status is a commit status.
type Status struct {
	ID          int64
	SHA         string
	Context     string
	State       string // error, failure, pending or success
	Description string
	TargetURL   string
	CreatedAt   time.Time
}

// WorkflowJob is a job of a workflow run; Log is its log's text.
type WorkflowJob struct {
	ID         int64
	Name       string
	Conclusion string // "" while it runs
	Log        string
}

// WorkflowRun is a run of a GitHub Actions workflow.
type WorkflowRun struct {
	ID         int64
	Name       string
	HeadSHA    string
	HeadBranch string
	Event      string // default "pull_request"
	Jobs       []WorkflowJob
	// Attempt counts the run's attempts; a re-run of its failed jobs starts the next.
	Attempt int
	// RerunRequests counts POST …/rerun-failed-jobs.
	RerunRequests int
}

type workflowRun struct {
	WorkflowRun
	repo    *repoState
	suiteID int64
	created time.Time
}

// AddForeignCheckRun records a check run of another app on a commit and returns its id.
func (s *Server) AddForeignCheckRun(owner, repo string, in ForeignCheckRun) int64 {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addForeignCheckRun(rs, in, s.nextID("check_suite"))
}

func (s *Server) addForeignCheckRun(rs *repoState, in ForeignCheckRun, suiteID int64) int64 {
	app := in.App
	if app.ID == 0 {
		s.fatalf("a foreign check run needs its app")
	}
	cr := &checkRun{repo: rs, suiteID: suiteID, app: &app, headBranch: in.HeadBranch, workflowRunID: in.workflowRunID}
	cr.ID = in.workflowJobID
	if cr.ID == 0 {
		cr.ID = s.nextID("check_run")
	}
	cr.Repo, cr.Name, cr.HeadSHA = rs.fullName(), in.Name, in.HeadSHA
	cr.Status, cr.Conclusion = in.Status, in.Conclusion
	switch {
	case cr.Conclusion != "":
		cr.Status = "completed"
	case cr.Status == "":
		cr.Status = "queued"
	}
	cr.Title, cr.Summary, cr.Text, cr.DetailsURL = in.Title, in.Summary, in.Text, in.DetailsURL
	cr.Annotations = slices.Clone(in.Annotations)
	cr.StartedAt = now()
	if cr.Status == "completed" {
		cr.CompletedAt = now()
	}
	s.checkRuns[cr.ID] = cr
	return cr.ID
}

// CompleteCheckRun completes a check run another app reported (or re-runs it with conclusion "").
func (s *Server) CompleteCheckRun(id int64, conclusion string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cr := s.checkRuns[id]
	if cr == nil {
		s.fatalf("no check run %d", id)
		return
	}
	cr.Conclusion = conclusion
	cr.Status, cr.CompletedAt = "completed", now()
	if conclusion == "" {
		cr.Status, cr.CompletedAt = "queued", time.Time{}
	}
}

// AddStatus records a commit status and returns it with its id.
func (s *Server) AddStatus(owner, repo string, st Status) Status {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	st.ID = s.nextID("status")
	if st.CreatedAt.IsZero() {
		st.CreatedAt = now()
	}
	rs.statuses = append(rs.statuses, st)
	return st
}

// AddWorkflowRun records a run of an Actions workflow on a commit: a check suite of GitHub Actions
// with a check run per job (its id is the job's), completed with the job's conclusion when it has one.
func (s *Server) AddWorkflowRun(owner, repo string, wr WorkflowRun) WorkflowRun {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &workflowRun{WorkflowRun: wr, repo: rs, suiteID: s.nextID("check_suite"), created: now()}
	r.ID = s.nextID("workflow_run")
	if r.Event == "" {
		r.Event = "pull_request"
	}
	r.Attempt = 1
	r.Jobs = slices.Clone(wr.Jobs)
	for i := range r.Jobs {
		r.Jobs[i].ID = s.nextID("check_run")
		s.addForeignCheckRun(rs, ForeignCheckRun{App: ActionsApp, Name: r.Jobs[i].Name, HeadSHA: r.HeadSHA, HeadBranch: r.HeadBranch,
			Conclusion: r.Jobs[i].Conclusion, workflowRunID: r.ID, workflowJobID: r.Jobs[i].ID,
			DetailsURL: fmt.Sprintf("%s/%s/actions/runs/%d/job/%d", s.ts.URL, rs.fullName(), r.ID, r.Jobs[i].ID)}, r.suiteID)
	}
	s.workflowRuns[r.ID] = r
	return r.snapshot()
}

// CompleteWorkflowJob ends a job of a workflow run (after a re-run, say) with a conclusion and a log.
func (s *Server) CompleteWorkflowJob(jobID int64, conclusion, log string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.workflowRuns {
		for i := range r.Jobs {
			if r.Jobs[i].ID == jobID {
				r.Jobs[i].Conclusion, r.Jobs[i].Log = conclusion, log
				cr := s.checkRuns[jobID]
				cr.Conclusion, cr.Status, cr.CompletedAt = conclusion, "completed", now()
				return
			}
		}
	}
	s.fatalf("no workflow job %d", jobID)
}

// WorkflowRunByID returns a workflow run as it is now.
func (s *Server) WorkflowRunByID(id int64) (WorkflowRun, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.workflowRuns[id]
	if r == nil {
		return WorkflowRun{}, false
	}
	return r.snapshot(), true
}

func (r *workflowRun) snapshot() WorkflowRun {
	out := r.WorkflowRun
	out.Jobs = slices.Clone(r.Jobs)
	return out
}

func (r *workflowRun) status() (status, conclusion string) {
	conclusion = "success"
	for _, j := range r.Jobs {
		switch j.Conclusion {
		case "":
			return "in_progress", ""
		case "success", "skipped", "neutral":
		default:
			conclusion = j.Conclusion
		}
	}
	return "completed", conclusion
}

func ciAppJSON(a *CIApp) obj {
	return obj{"id": a.ID, "slug": a.Slug, "node_id": nodeID("A_", a.ID), "name": a.Name,
		"owner": obj{"login": "github", "id": 9919, "type": "Organization"}, "description": "", "external_url": "https://github.com",
		"html_url": "https://github.com/apps/" + a.Slug, "created_at": "2018-07-30T09:30:17Z", "updated_at": "2024-01-01T00:00:00Z",
		"permissions": obj{}, "events": []any{}}
}

// commitAt resolves the {ref} of a commits/{ref}/… route, answering GitHub's 422 when it names nothing.
func (s *Server) commitAt(w http.ResponseWriter, r *http.Request, c *call) (string, bool) {
	ref := r.PathValue("ref")
	sha, err := s.resolve(r.Context(), c.repo.dir, ref)
	if err != nil || sha == "" {
		writeUnprocessable(w, "No commit found for SHA: "+ref)
		return "", false
	}
	return sha, true
}

func (s *Server) listCheckSuitesForRef(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := s.commitAt(w, r, c)
	if !ok {
		return
	}
	suites := map[int64][]*checkRun{}
	for _, cr := range s.checkRuns {
		if cr.repo == c.repo && cr.HeadSHA == sha {
			suites[cr.suiteID] = append(suites[cr.suiteID], cr)
		}
	}
	ids := make([]int64, 0, len(suites))
	for id := range suites {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	q := r.URL.Query()
	var out []any
	for _, id := range ids {
		runs := suites[id]
		first := runs[0]
		if appID := q.Get("app_id"); appID != "" && appID != strconv.FormatInt(s.appOf(first).ID, 10) {
			continue
		}
		status, conclusion := "completed", "success"
		for _, cr := range runs {
			if cr.Status != "completed" {
				status, conclusion = "in_progress", ""
				break
			}
			if cr.Conclusion != "success" && cr.Conclusion != "neutral" && cr.Conclusion != "skipped" {
				conclusion = cr.Conclusion
			}
		}
		var concl any
		if conclusion != "" {
			concl = conclusion
		}
		app := s.appOf(first)
		out = append(out, obj{
			"id": id, "node_id": nodeID("CS_", id), "head_branch": first.headBranch, "head_sha": sha, "status": status,
			"conclusion": concl, "url": s.api("repos/%s/check-suites/%d", c.repo.fullName(), id), "before": nil, "after": sha,
			"pull_requests": []any{}, "app": ciAppJSON(&app), "repository": s.repoJSON(c.repo), "created_at": ts(first.StartedAt),
			"updated_at": ts(now()), "latest_check_runs_count": len(runs),
			"check_runs_url": s.api("repos/%s/check-suites/%d/check-runs", c.repo.fullName(), id),
			"head_commit":    obj{"id": sha, "tree_id": sha, "message": "", "timestamp": ts(first.StartedAt), "author": nil, "committer": nil},
		})
	}
	lo, hi := s.paginate(w, r, len(out))
	writeJSON(w, http.StatusOK, obj{"total_count": len(out), "check_suites": append([]any{}, out[lo:hi]...)})
}

// appOf is the app that reported a check run: another app, or this fake's own App.
func (s *Server) appOf(cr *checkRun) CIApp {
	if cr.app != nil {
		return *cr.app
	}
	return CIApp{ID: s.appID, Slug: s.appSlug, Name: s.appSlug}
}

func (s *Server) getCombinedStatus(w http.ResponseWriter, r *http.Request, c *call) {
	sha, ok := s.commitAt(w, r, c)
	if !ok {
		return
	}
	// The latest status of each context, newest first, as GitHub combines them.
	latest := map[string]Status{}
	for _, st := range c.repo.statuses {
		if st.SHA == sha {
			latest[st.Context] = st
		}
	}
	var list []Status
	for _, st := range latest {
		list = append(list, st)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID > list[j].ID })
	state := "success"
	if len(list) == 0 {
		state = "pending"
	}
	statuses := []any{}
	for _, st := range list {
		switch {
		case st.State == "failure" || st.State == "error":
			state = "failure"
		case st.State == "pending" && state != "failure":
			state = "pending"
		}
		var desc, target any
		if st.Description != "" {
			desc = st.Description
		}
		if st.TargetURL != "" {
			target = st.TargetURL
		}
		statuses = append(statuses, obj{"id": st.ID, "node_id": nodeID("SC_", st.ID), "url": s.api("repos/%s/statuses/%s", c.repo.fullName(), sha),
			"avatar_url": nil, "state": st.State, "description": desc, "target_url": target, "context": st.Context,
			"created_at": ts(st.CreatedAt), "updated_at": ts(st.CreatedAt)})
	}
	writeJSON(w, http.StatusOK, obj{"state": state, "statuses": statuses, "sha": sha, "total_count": len(statuses),
		"repository": s.repoJSON(c.repo), "commit_url": s.api("repos/%s/commits/%s", c.repo.fullName(), sha),
		"url": s.api("repos/%s/commits/%s/status", c.repo.fullName(), sha)})
}

func (s *Server) checkRunOf(w http.ResponseWriter, r *http.Request, c *call) (*checkRun, bool) {
	id, ok := pathInt(w, r, "check_run_id")
	if !ok {
		return nil, false
	}
	cr := s.checkRuns[id]
	if cr == nil || cr.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return cr, true
}

func (s *Server) getCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	if cr, ok := s.checkRunOf(w, r, c); ok {
		writeJSON(w, http.StatusOK, s.checkRunJSON(cr))
	}
}

func (s *Server) listAnnotations(w http.ResponseWriter, r *http.Request, c *call) {
	cr, ok := s.checkRunOf(w, r, c)
	if !ok {
		return
	}
	lo, hi := s.paginate(w, r, len(cr.Annotations))
	out := []any{}
	for _, a := range cr.Annotations[lo:hi] {
		var title, details any
		if a.Title != "" {
			title = a.Title
		}
		if a.RawDetails != "" {
			details = a.RawDetails
		}
		out = append(out, obj{"path": a.Path, "start_line": a.StartLine, "end_line": a.EndLine, "start_column": a.StartColumn,
			"end_column": a.EndColumn, "annotation_level": a.AnnotationLevel, "title": title, "message": a.Message,
			"raw_details": details, "blob_href": fmt.Sprintf("%s/%s/blob/%s/%s", s.ts.URL, c.repo.fullName(), cr.HeadSHA, a.Path)})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) workflowRunJSON(wr *workflowRun) obj {
	status, conclusion := wr.status()
	var concl any
	if conclusion != "" {
		concl = conclusion
	}
	full := wr.repo.fullName()
	return obj{"id": wr.ID, "name": wr.Name, "node_id": nodeID("WFR_", wr.ID), "check_suite_id": wr.suiteID,
		"head_branch": wr.HeadBranch, "head_sha": wr.HeadSHA, "path": ".github/workflows/ci.yml", "run_number": wr.ID % 1000,
		"run_attempt": wr.Attempt, "event": wr.Event, "status": status, "conclusion": concl, "workflow_id": 1,
		"url": s.api("repos/%s/actions/runs/%d", full, wr.ID), "html_url": fmt.Sprintf("%s/%s/actions/runs/%d", s.ts.URL, full, wr.ID),
		"pull_requests": []any{}, "created_at": ts(wr.created), "updated_at": ts(now()), "run_started_at": ts(wr.created),
		"jobs_url": s.api("repos/%s/actions/runs/%d/jobs", full, wr.ID), "logs_url": s.api("repos/%s/actions/runs/%d/logs", full, wr.ID),
		"check_suite_url": s.api("repos/%s/check-suites/%d", full, wr.suiteID), "artifacts_url": s.api("repos/%s/actions/runs/%d/artifacts", full, wr.ID),
		"cancel_url": s.api("repos/%s/actions/runs/%d/cancel", full, wr.ID), "rerun_url": s.api("repos/%s/actions/runs/%d/rerun", full, wr.ID),
		"workflow_url": s.api("repos/%s/actions/workflows/1", full), "head_commit": nil,
		"repository": s.repoJSON(wr.repo), "head_repository": s.repoJSON(wr.repo), "display_title": wr.Name}
}

func (s *Server) jobJSON(wr *workflowRun, j WorkflowJob) obj {
	full := wr.repo.fullName()
	status, concl := "completed", any(j.Conclusion)
	if j.Conclusion == "" {
		status, concl = "in_progress", nil
	}
	cr := s.checkRuns[j.ID]
	return obj{"id": j.ID, "run_id": wr.ID, "run_url": s.api("repos/%s/actions/runs/%d", full, wr.ID), "run_attempt": wr.Attempt,
		"node_id": nodeID("CR_", j.ID), "head_sha": wr.HeadSHA, "head_branch": wr.HeadBranch, "url": s.api("repos/%s/actions/jobs/%d", full, j.ID),
		"html_url": fmt.Sprintf("%s/%s/actions/runs/%d/job/%d", s.ts.URL, full, wr.ID, j.ID), "status": status, "conclusion": concl,
		"created_at": ts(wr.created), "started_at": ts(cr.StartedAt), "completed_at": ts(cr.CompletedAt), "name": j.Name,
		"steps": []any{}, "check_run_url": s.api("repos/%s/check-runs/%d", full, j.ID), "labels": []any{"ubuntu-latest"},
		"runner_id": nil, "runner_name": nil, "runner_group_id": nil, "runner_group_name": nil, "workflow_name": wr.Name}
}

func (s *Server) listWorkflowRuns(w http.ResponseWriter, r *http.Request, c *call) {
	q := r.URL.Query()
	var list []*workflowRun
	for _, wr := range s.workflowRuns {
		if wr.repo != c.repo {
			continue
		}
		status, conclusion := wr.status()
		switch {
		case q.Get("head_sha") != "" && q.Get("head_sha") != wr.HeadSHA,
			q.Get("branch") != "" && q.Get("branch") != wr.HeadBranch,
			q.Get("event") != "" && q.Get("event") != wr.Event,
			q.Get("status") != "" && q.Get("status") != status && q.Get("status") != conclusion:
			continue
		}
		list = append(list, wr)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID > list[j].ID })
	lo, hi := s.paginate(w, r, len(list))
	out := []any{}
	for _, wr := range list[lo:hi] {
		out = append(out, s.workflowRunJSON(wr))
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(list), "workflow_runs": out})
}

func (s *Server) workflowRunOf(w http.ResponseWriter, r *http.Request, c *call) (*workflowRun, bool) {
	id, ok := pathInt(w, r, "run_id")
	if !ok {
		return nil, false
	}
	wr := s.workflowRuns[id]
	if wr == nil || wr.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return nil, false
	}
	return wr, true
}

func (s *Server) listJobsForWorkflowRun(w http.ResponseWriter, r *http.Request, c *call) {
	wr, ok := s.workflowRunOf(w, r, c)
	if !ok {
		return
	}
	lo, hi := s.paginate(w, r, len(wr.Jobs))
	out := []any{}
	for _, j := range wr.Jobs[lo:hi] {
		out = append(out, s.jobJSON(wr, j))
	}
	writeJSON(w, http.StatusOK, obj{"total_count": len(wr.Jobs), "jobs": out})
}

// jobOf finds a workflow job by its id.
func (s *Server) jobOf(w http.ResponseWriter, r *http.Request, c *call) (*workflowRun, WorkflowJob, bool) {
	id, ok := pathInt(w, r, "job_id")
	if !ok {
		return nil, WorkflowJob{}, false
	}
	for _, wr := range s.workflowRuns {
		if wr.repo != c.repo {
			continue
		}
		for _, j := range wr.Jobs {
			if j.ID == id {
				return wr, j, true
			}
		}
	}
	writeError(w, http.StatusNotFound, "Not Found")
	return nil, WorkflowJob{}, false
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request, c *call) {
	if wr, j, ok := s.jobOf(w, r, c); ok {
		writeJSON(w, http.StatusOK, s.jobJSON(wr, j))
	}
}

// downloadJobLogs answers as GitHub does: a redirect to a short-lived address of the log's text,
// which needs no token (serveJobLog serves it).
func (s *Server) downloadJobLogs(w http.ResponseWriter, r *http.Request, c *call) {
	if _, j, ok := s.jobOf(w, r, c); ok {
		w.Header().Set("Location", fmt.Sprintf("%s/_job-logs/%d?sig=%s", s.ts.URL, j.ID, randomHex(8)))
		w.WriteHeader(http.StatusFound)
	}
}

func (s *Server) serveJobLog(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/_job-logs/"), 10, 64)
	if err != nil || r.URL.Query().Get("sig") == "" {
		http.Error(w, "Not Found", http.StatusNotFound)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, wr := range s.workflowRuns {
		for _, j := range wr.Jobs {
			if j.ID == id {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				_, _ = w.Write([]byte(j.Log))
				return
			}
		}
	}
	http.Error(w, "Not Found", http.StatusNotFound)
}

// rerunFailedJobs starts the run's next attempt: its failed jobs are queued again, and the test
// completes them with CompleteWorkflowJob.
func (s *Server) rerunFailedJobs(w http.ResponseWriter, r *http.Request, c *call) {
	wr, ok := s.workflowRunOf(w, r, c)
	if !ok {
		return
	}
	if status, _ := wr.status(); status != "completed" {
		writeError(w, http.StatusForbidden, "This workflow run is not completed")
		return
	}
	wr.RerunRequests++
	wr.Attempt++
	for i, j := range wr.Jobs {
		if j.Conclusion != "success" && j.Conclusion != "skipped" && j.Conclusion != "neutral" {
			wr.Jobs[i].Conclusion, wr.Jobs[i].Log = "", ""
			cr := s.checkRuns[j.ID]
			cr.Conclusion, cr.Status, cr.CompletedAt = "", "queued", time.Time{}
		}
	}
	writeJSON(w, http.StatusCreated, obj{})
}

// checkRunAppJSON is the app that reported the check run, as its JSON shows it.
func (s *Server) checkRunAppJSON(c *checkRun) obj {
	if c.app == nil {
		return s.appJSON()
	}
	return ciAppJSON(c.app)
}

// SetRequiredChecks protects a branch with required status checks (none: unprotected).
func (s *Server) SetRequiredChecks(owner, repo, branch string, checks ...string) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs.required == nil {
		rs.required = map[string][]string{}
	}
	rs.required[branch] = slices.Clone(checks)
}

// RequireUpToDate makes a branch's required checks strict: a pull request into it must contain its head
// before it may merge, so one that falls behind is "behind" (mergeable_state) rather than clean.
func (s *Server) RequireUpToDate(owner, repo, branch string, on bool) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs.strict == nil {
		rs.strict = map[string]bool{}
	}
	rs.strict[branch] = on
}

// SetRulesetChecks makes an active repository ruleset require status checks on a branch (none: no
// such ruleset). Unlike branch protection, GitHub shows rulesets to any App that may read the
// repository's metadata.
func (s *Server) SetRulesetChecks(owner, repo, branch string, checks ...string) {
	rs := s.repo(owner, repo)
	s.mu.Lock()
	defer s.mu.Unlock()
	if rs.ruleChecks == nil {
		rs.ruleChecks = map[string][]string{}
	}
	rs.ruleChecks[branch] = slices.Clone(checks)
}

// getBranchRules answers with the active rules of a branch: a required_status_checks rule of the
// repository's ruleset when SetRulesetChecks gave it checks, and a required_signatures rule when
// RequireSignatures named a ruleset. The branch need not exist.
func (s *Server) getBranchRules(w http.ResponseWriter, r *http.Request, c *call) {
	branch := r.PathValue("branch")
	checks := c.repo.ruleChecks[branch]
	rules := []any{}
	if c.repo.signatures[branch] == SignaturesByRuleset {
		rules = append(rules, obj{"type": "required_signatures", "ruleset_source_type": "Repository",
			"ruleset_source": c.repo.fullName(), "ruleset_id": 43})
	}
	if len(checks) > 0 {
		required := []any{}
		for _, name := range checks {
			required = append(required, obj{"context": name})
		}
		rules = append(rules, obj{"type": "required_status_checks", "ruleset_source_type": "Repository",
			"ruleset_source": c.repo.fullName(), "ruleset_id": 42,
			"parameters": obj{"required_status_checks": required, "strict_required_status_checks_policy": c.repo.strict[branch]}})
	}
	writeJSON(w, http.StatusOK, rules)
}
