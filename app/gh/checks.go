package gh

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/go-github/v60/github"

	"github.com/akira-bot/akira/jobs/ports"
)

// Check run statuses and conclusions. Akira maps a verified task to success, a failed one to failure, a
// skipped one to neutral and an escalated one to action_required (with buttons).
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"

	ConclusionSuccess        = "success"
	ConclusionFailure        = "failure"
	ConclusionNeutral        = "neutral"
	ConclusionActionRequired = "action_required"
	ConclusionCancelled      = "cancelled"
)

// Annotation levels.
const (
	LevelFailure = "failure"
	LevelWarning = "warning"
	LevelNotice  = "notice"
)

// MaxTotalAnnotations caps the annotations sent for one check run: each batch of 50 is one request,
// and hundreds of annotations help nobody.
const MaxTotalAnnotations = 500

// action is a check run button as GitHub takes it: a label of at most 20 characters, a description of
// at most 40 and an identifier of at most 20. The identifier is the button's decision.
type action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

type checkOutput struct {
	Title       string           `json:"title"`
	Summary     string           `json:"summary"`
	Text        string           `json:"text,omitempty"`
	Annotations []annotationJSON `json:"annotations,omitempty"`
}

type annotationJSON struct {
	Path            string `json:"path"`
	StartLine       int    `json:"start_line"`
	EndLine         int    `json:"end_line"`
	AnnotationLevel string `json:"annotation_level"`
	Message         string `json:"message"`
	Title           string `json:"title,omitempty"`
}

// checkRunRequest is the body of create and update. go-github's UpdateCheckRunOptions always sends
// "name", which would rename a check run to "" on an update that does not mean to touch it.
type checkRunRequest struct {
	Name        string       `json:"name,omitempty"`
	HeadSHA     string       `json:"head_sha,omitempty"`
	DetailsURL  string       `json:"details_url,omitempty"`
	ExternalID  string       `json:"external_id,omitempty"`
	Status      string       `json:"status,omitempty"`
	Conclusion  string       `json:"conclusion,omitempty"`
	CompletedAt string       `json:"completed_at,omitempty"`
	Output      *checkOutput `json:"output,omitempty"`
	Actions     *[]action    `json:"actions,omitempty"`
}

type checkRunResponse struct {
	ID      int64  `json:"id"`
	HTMLURL string `json:"html_url"`
}

// CreateCheckRun implements ports.Checks: it creates a check run and returns its id and web URL.
// Annotations beyond the first 50 are sent by further updates, 50 at a time, as GitHub's API requires.
// Summary and Text are cut to GitHub's limit with a note; Title defaults to Name.
//
// With cr.MayExist, a check run in progress with the same external_id, name and head commit that this
// App created already (a job died after GitHub created it, before its id was stored) is updated and
// returned instead: a task never gets a second check run with the first left in progress. Completed
// ones are not reused: a new round of a task after a decision gets a new check run.
func (c *Client) CreateCheckRun(ctx context.Context, owner, repo string, cr ports.CheckRun) (int64, string, error) {
	if cr.Name == "" || cr.HeadSHA == "" {
		return 0, "", errors.New("gh: create check run: name and head sha are required")
	}
	if cr.ExternalID != "" && cr.MayExist {
		id, htmlURL, err := c.findCheckRun(ctx, owner, repo, cr)
		if err != nil {
			return 0, "", err
		}
		if id != 0 {
			c.log.Info("check run exists already; updating it", "check_run", id, "external_id", cr.ExternalID)
			if err := c.UpdateCheckRun(ctx, owner, repo, id, cr); err != nil {
				return 0, "", err
			}
			return id, htmlURL, nil
		}
	}
	body, out, batches, err := c.checkRunBody(cr, true)
	if err != nil {
		return 0, "", fmt.Errorf("gh: create check run: %w", err)
	}
	if len(batches) > 0 {
		out.Annotations = batches[0]
	}
	var resp checkRunResponse
	if err := c.do(ctx, http.MethodPost, fmt.Sprintf("repos/%s/%s/check-runs", url.PathEscape(owner), url.PathEscape(repo)), body, &resp); err != nil {
		return 0, "", apiErr("create check run", err)
	}
	if err := c.sendAnnotations(ctx, owner, repo, resp.ID, out, batches); err != nil {
		return resp.ID, resp.HTMLURL, err
	}
	return resp.ID, resp.HTMLURL, nil
}

// UpdateCheckRun implements ports.Checks: it changes a check run, leaving empty fields as they are. GitHub
// wants a title and a summary with any output, so an update that changes the output without either is
// an error.
func (c *Client) UpdateCheckRun(ctx context.Context, owner, repo string, id int64, cr ports.CheckRun) error {
	body, out, batches, err := c.checkRunBody(cr, false)
	if err != nil {
		return fmt.Errorf("gh: update check run %d: %w", id, err)
	}
	if len(batches) > 0 {
		out.Annotations = batches[0]
	}
	if err := c.do(ctx, http.MethodPatch, checkRunPath(owner, repo, id), body, nil); err != nil {
		return apiErr(fmt.Sprintf("update check run %d", id), err)
	}
	return c.sendAnnotations(ctx, owner, repo, id, out, batches)
}

// findCheckRun looks for the App's check run of cr's name and external_id on cr's head commit.
func (c *Client) findCheckRun(ctx context.Context, owner, repo string, cr ports.CheckRun) (int64, string, error) {
	opts := &github.ListCheckRunsOptions{CheckName: github.String(cr.Name), Filter: github.String("all"),
		Status: github.String("in_progress"), ListOptions: github.ListOptions{PerPage: 100}}
	if c.app != nil && c.app.cfg.AppID != 0 {
		opts.AppID = github.Int64(c.app.cfg.AppID)
	}
	for {
		res, resp, err := c.gh.Checks.ListCheckRunsForRef(ctx, owner, repo, cr.HeadSHA, opts)
		if err != nil {
			return 0, "", apiErr("find check run", err)
		}
		for _, run := range res.CheckRuns {
			if run.GetExternalID() == cr.ExternalID {
				return run.GetID(), run.GetHTMLURL(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, "", nil
		}
		opts.Page = resp.NextPage
	}
}

func checkRunPath(owner, repo string, id int64) string {
	return fmt.Sprintf("repos/%s/%s/check-runs/%d", url.PathEscape(owner), url.PathEscape(repo), id)
}

// sendAnnotations sends the batches after the first, each with the output's title and summary (GitHub
// requires both with any output) and without the text, which stays as the first request set it.
func (c *Client) sendAnnotations(ctx context.Context, owner, repo string, id int64, out *checkOutput, batches [][]annotationJSON) error {
	for i := 1; i < len(batches); i++ {
		req := checkRunRequest{Output: &checkOutput{Title: out.Title, Summary: out.Summary, Annotations: batches[i]}}
		if err := c.do(ctx, http.MethodPatch, checkRunPath(owner, repo, id), req, nil); err != nil {
			return apiErr(fmt.Sprintf("check run %d: annotations %d to %d", id, i*MaxAnnotations+1, i*MaxAnnotations+len(batches[i])), err)
		}
	}
	return nil
}

// checkRunBody builds the request and splits the annotations into batches.
func (c *Client) checkRunBody(cr ports.CheckRun, create bool) (checkRunRequest, *checkOutput, [][]annotationJSON, error) {
	req := checkRunRequest{
		Name: cr.Name, HeadSHA: cr.HeadSHA, DetailsURL: cr.DetailsURL, ExternalID: cr.ExternalID,
		Status: cr.Status, Conclusion: cr.Conclusion,
	}
	if !create {
		req.HeadSHA = ""
	}
	if cr.Conclusion != "" {
		req.Status = StatusCompleted
		req.CompletedAt = time.Now().UTC().Format(time.RFC3339)
	}
	if len(cr.Buttons) > 3 {
		return req, nil, nil, fmt.Errorf("%d buttons, GitHub allows 3", len(cr.Buttons))
	}
	switch {
	case cr.Buttons != nil:
		acts := make([]action, 0, len(cr.Buttons))
		for _, b := range cr.Buttons {
			acts = append(acts, action{Label: b.Label, Description: b.Description, Identifier: string(b.Decision)})
		}
		req.Actions = &acts
	case cr.Conclusion != "" && cr.Conclusion != ConclusionActionRequired:
		req.Actions = &[]action{}
	}
	anns := normalizeAnnotations(cr.Annotations)
	if len(anns) > MaxTotalAnnotations {
		c.log.Warn("gh: too many annotations, sending the first ones", "annotations", len(anns), "sent", MaxTotalAnnotations)
		anns = anns[:MaxTotalAnnotations]
	}
	var batches [][]annotationJSON
	for len(anns) > 0 {
		n := min(MaxAnnotations, len(anns))
		batches = append(batches, anns[:n])
		anns = anns[n:]
	}
	if cr.Title == "" && cr.Summary == "" && cr.Text == "" && len(batches) == 0 {
		return req, nil, nil, nil
	}
	if cr.Summary == "" {
		return req, nil, nil, errors.New("output needs a summary")
	}
	out := &checkOutput{
		Title:   cr.Title,
		Summary: Truncate(cr.Summary, MaxCheckOutputLen),
		Text:    Truncate(cr.Text, MaxCheckOutputLen),
	}
	if out.Title == "" {
		out.Title = cr.Name
	}
	if out.Title == "" {
		// GitHub requires a title with any output, and guessing one would overwrite the current one.
		return req, nil, nil, errors.New("output needs a title (or a name)")
	}
	req.Output = out
	return req, out, batches, nil
}

func normalizeAnnotations(in []ports.Annotation) []annotationJSON {
	out := make([]annotationJSON, 0, len(in))
	for _, a := range in {
		if a.Path == "" {
			continue
		}
		start := max(a.StartLine, 1)
		end := max(a.EndLine, start)
		level := a.Level
		if level != LevelWarning && level != LevelNotice {
			level = LevelFailure
		}
		msg := a.Message
		if strings.TrimSpace(msg) == "" {
			msg = a.Title
		}
		if strings.TrimSpace(msg) == "" {
			msg = "(no message)"
		}
		title := a.Title
		if utf8.RuneCountInString(title) > 255 {
			title = string([]rune(title)[:254]) + "…"
		}
		out = append(out, annotationJSON{
			Path: strings.TrimPrefix(a.Path, "./"), StartLine: start, EndLine: end, AnnotationLevel: level,
			Message: Truncate(msg, 64<<10-1), Title: title,
		})
	}
	return out
}

// do sends a JSON request relative to the API root and decodes the answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	req, err := c.gh.NewRequest(method, path, body)
	if err != nil {
		return err
	}
	_, err = c.gh.Do(ctx, req, out)
	return err
}
