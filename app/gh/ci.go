package gh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
)

// CIChecks lists a commit's checks that are not Akira's own: every other app's check runs (the latest
// of each name, as GitHub's "latest" filter gives them) and the latest status of each context.
func (c *Client) CIChecks(ctx context.Context, owner, repo, sha string) ([]ports.CICheck, error) {
	var out []ports.CICheck
	opts := &github.ListCheckRunsOptions{Filter: github.String("latest"), ListOptions: github.ListOptions{PerPage: 100}}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, repo, sha, opts)
		if err != nil {
			return nil, apiErr("check runs of "+short(sha), err)
		}
		for _, run := range res.CheckRuns {
			if c.app != nil && run.GetApp().GetID() == c.app.cfg.AppID {
				continue // Akira's own
			}
			out = append(out, ports.CICheck{Name: run.GetName(), Source: ports.CISourceCheckRun, App: run.GetApp().GetSlug(),
				ID: run.GetID(), Status: run.GetStatus(), Conclusion: run.GetConclusion(),
				URL: firstOf(run.GetHTMLURL(), run.GetDetailsURL()), Title: run.GetOutput().GetTitle(), Summary: run.GetOutput().GetSummary()})
		}
		if resp.NextPage == 0 {
			break
		}
		opts.Page = resp.NextPage
	}
	st, _, err := c.gh.Repositories.GetCombinedStatus(ctx, owner, repo, sha, &github.ListOptions{PerPage: 100})
	if err != nil {
		return nil, apiErr("statuses of "+short(sha), err)
	}
	for _, s := range st.Statuses {
		check := ports.CICheck{Name: s.GetContext(), Source: ports.CISourceStatus, Status: "completed", Conclusion: s.GetState(),
			URL: s.GetTargetURL(), Summary: s.GetDescription()}
		if s.GetState() == "pending" {
			check.Status, check.Conclusion = "in_progress", ""
		}
		out = append(out, check)
	}
	return out, nil
}

// maxLogTail is how much of a job's log is read: the end, where the failure is.
const maxLogTail = 256 << 10

// CIEvidence is what explains a failed check: the tail of a GitHub Actions job's log, else a check
// run's output and annotations, else a status's description.
func (c *Client) CIEvidence(ctx context.Context, owner, repo string, check ports.CICheck) (string, error) {
	if check.Source == ports.CISourceStatus {
		return strings.TrimSpace(check.Summary + "\n" + check.URL), nil
	}
	if check.App == ports.CIAppActions {
		log, err := c.jobLog(ctx, owner, repo, check.ID)
		if err == nil && strings.TrimSpace(log) != "" {
			return log, nil
		}
		if err != nil {
			c.log.Warn("job log unavailable; using the check run's output", "job", check.ID, "err", err)
		}
	}
	run, _, err := c.gh.Checks.GetCheckRun(ctx, owner, repo, check.ID)
	if err != nil {
		return "", apiErr("check run", err)
	}
	var b strings.Builder
	out := run.GetOutput()
	for _, s := range []string{out.GetTitle(), out.GetSummary(), out.GetText()} {
		if s = strings.TrimSpace(s); s != "" {
			b.WriteString(s + "\n")
		}
	}
	if out.GetAnnotationsCount() > 0 {
		anns, _, err := c.gh.Checks.ListCheckRunAnnotations(ctx, owner, repo, check.ID, &github.ListOptions{PerPage: 50})
		if err != nil {
			return "", apiErr("annotations", err)
		}
		for _, a := range anns {
			fmt.Fprintf(&b, "%s:%d: %s: %s\n", a.GetPath(), a.GetStartLine(), a.GetAnnotationLevel(), a.GetMessage())
		}
	}
	return b.String(), nil
}

// jobLog reads the end of an Actions job's log. GitHub answers with a redirect to storage that needs
// no token, and the token must not travel there: the log is read with the plain transport.
func (c *Client) jobLog(ctx context.Context, owner, repo string, jobID int64) (string, error) {
	u, _, err := c.gh.Actions.GetWorkflowJobLogs(ctx, owner, repo, jobID, 0)
	if err != nil {
		return "", apiErr("job log", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("gh: job log: %w", err)
	}
	resp, err := c.plainHTTP().Do(req)
	if err != nil {
		return "", fmt.Errorf("gh: job log: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("gh: job log: HTTP %d", resp.StatusCode)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("gh: job log: %w", err)
	}
	if len(data) > maxLogTail {
		data = data[len(data)-maxLogTail:]
	}
	return string(data), nil
}

// plainHTTP is a client without the App's credentials, for addresses outside the API.
func (c *Client) plainHTTP() *http.Client {
	tr := http.DefaultTransport
	if c.app != nil && c.app.cfg.HTTPClient != nil && c.app.cfg.HTTPClient.Transport != nil {
		tr = c.app.cfg.HTTPClient.Transport
	}
	return &http.Client{Transport: tr}
}

// RerunFailedJobs re-runs the failed jobs of the workflow run a GitHub Actions job belongs to.
func (c *Client) RerunFailedJobs(ctx context.Context, owner, repo string, jobID int64) error {
	job, _, err := c.gh.Actions.GetWorkflowJobByID(ctx, owner, repo, jobID)
	if err != nil {
		return apiErr("workflow job", err)
	}
	if _, err := c.gh.Actions.RerunFailedJobsByID(ctx, owner, repo, job.GetRunID()); err != nil {
		return apiErr("re-run failed jobs", err)
	}
	return nil
}

// RequiredChecks are the checks the base branch requires: those of its protection and those of the
// active rulesets that apply to it, in that order, each once. Either source may be closed to the App
// (reading branch protection takes administration access; rulesets only metadata): the other still
// counts, and only when neither answers is the error returned.
func (c *Client) RequiredChecks(ctx context.Context, owner, repo, branch string) ([]string, error) {
	fromProtection, perr := c.protectionChecks(ctx, owner, repo, branch)
	fromRules, rerr := c.rulesetChecks(ctx, owner, repo, branch)
	if perr != nil && rerr != nil {
		return nil, errors.Join(perr, rerr)
	}
	out := fromProtection
	for _, name := range fromRules {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// WorkflowFiles lists the GitHub Actions workflows at ref: the .yml and .yaml files directly in
// .github/workflows, which is all GitHub reads (one contents call; no directory is no workflow).
func (c *Client) WorkflowFiles(ctx context.Context, owner, repo, ref string) ([]string, error) {
	_, dir, _, err := c.gh.Repositories.GetContents(ctx, owner, repo, workflowsDir, &github.RepositoryContentGetOptions{Ref: ref})
	if StatusOf(err) == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, apiErr("list "+workflowsDir, err)
	}
	var out []string
	for _, e := range dir {
		if e.GetType() == "file" && (strings.HasSuffix(e.GetName(), ".yml") || strings.HasSuffix(e.GetName(), ".yaml")) {
			out = append(out, e.GetPath())
		}
	}
	return out, nil
}

// workflowsDir is where GitHub Actions reads a repository's workflows.
const workflowsDir = ".github/workflows"

func (c *Client) protectionChecks(ctx context.Context, owner, repo, branch string) ([]string, error) {
	// go-github's Branch drops the protection GitHub sends with it; read the fields Akira needs.
	req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/branches/%s", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(branch)), nil)
	if err != nil {
		return nil, fmt.Errorf("gh: branch %s: %w", branch, err)
	}
	var b struct {
		Protection struct {
			RequiredStatusChecks struct {
				Contexts []string `json:"contexts"`
				Checks   []struct {
					Context string `json:"context"`
				} `json:"checks"`
			} `json:"required_status_checks"`
		} `json:"protection"`
	}
	if _, err := c.gh.Do(ctx, req, &b); err != nil {
		return nil, apiErr("branch "+branch, err)
	}
	rsc := b.Protection.RequiredStatusChecks
	out := slices.Clone(rsc.Contexts)
	for _, ch := range rsc.Checks {
		if !slices.Contains(out, ch.Context) {
			out = append(out, ch.Context)
		}
	}
	return out, nil
}

// rulesetChecks are the status checks that the active rulesets applying to branch require.
func (c *Client) rulesetChecks(ctx context.Context, owner, repo, branch string) ([]string, error) {
	// go-github v60's rule parameters are raw JSON; read just the required_status_checks rule.
	req, err := c.gh.NewRequest(http.MethodGet, fmt.Sprintf("repos/%s/%s/rules/branches/%s?per_page=100", url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(branch)), nil)
	if err != nil {
		return nil, fmt.Errorf("gh: rules of %s: %w", branch, err)
	}
	var rules []struct {
		Type       string `json:"type"`
		Parameters struct {
			RequiredStatusChecks []struct {
				Context string `json:"context"`
			} `json:"required_status_checks"`
		} `json:"parameters"`
	}
	if _, err := c.gh.Do(ctx, req, &rules); err != nil {
		return nil, apiErr("rules of "+branch, err)
	}
	var out []string
	for _, r := range rules {
		if r.Type != "required_status_checks" {
			continue
		}
		for _, ch := range r.Parameters.RequiredStatusChecks {
			if ch.Context != "" && !slices.Contains(out, ch.Context) {
				out = append(out, ch.Context)
			}
		}
	}
	return out, nil
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
