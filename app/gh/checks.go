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

// Identifiers of the escalation buttons; a check_run requested_action event carries one of them.
const (
	ActionApprove = "approve"
	ActionRetry   = "retry"
	ActionSkip    = "skip"
)

// MaxTotalAnnotations caps the annotations sent for one check run: each batch of 50 is one request,
// and hundreds of annotations help nobody.
const MaxTotalAnnotations = 500

// Annotation is a message on a line range of a file, shown in the pull request's diff.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // failure, warning or notice
	Message   string
	Title     string
}

// Action is a check run button. GitHub allows three, with a label of at most 20 characters, a
// description of at most 40 and an identifier of at most 20.
type Action struct {
	Label       string `json:"label"`
	Description string `json:"description"`
	Identifier  string `json:"identifier"`
}

// EscalationActions are the buttons of an escalated task's check run.
func EscalationActions() []Action {
	return []Action{
		{Label: "Approve", Description: "Accept the task as it is and go on", Identifier: ActionApprove},
		{Label: "Retry", Description: "Try the task again", Identifier: ActionRetry},
		{Label: "Skip", Description: "Leave the task undone and go on", Identifier: ActionSkip},
	}
}

// CheckRunName is the name of a task's check run: "akira: <id> <title>".
func CheckRunName(taskID, title string) string {
	name := strings.Join(strings.Fields("akira: "+taskID+" "+title), " ")
	if utf8.RuneCountInString(name) > 100 {
		name = string([]rune(name)[:99]) + "…"
	}
	return name
}

// CheckRun is what to create, or what to change: on update, empty fields are left as they are.
type CheckRun struct {
	Name       string
	HeadSHA    string // required on create
	Status     string // queued, in_progress or completed
	Conclusion string // completes the check run
	ExternalID string
	DetailsURL string
	// Title, Summary and Text are the output; Summary and Text are cut to GitHub's limit with a note.
	// GitHub wants a title and a summary with any output: Title defaults to Name, and an update that
	// changes the output without either is an error.
	Title       string
	Summary     string
	Text        string
	Annotations []Annotation
	// Actions are the buttons. A conclusion other than action_required removes the buttons unless
	// Actions is set.
	Actions []Action
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
	Actions     *[]Action    `json:"actions,omitempty"`
}

type checkRunResponse struct {
	ID      int64  `json:"id"`
	HTMLURL string `json:"html_url"`
}

// CreateCheckRun creates a check run and returns its id and web URL. Annotations beyond the first 50
// are sent by further updates, 50 at a time, as GitHub's API requires.
func (c *Client) CreateCheckRun(ctx context.Context, owner, repo string, cr CheckRun) (int64, string, error) {
	if cr.Name == "" || cr.HeadSHA == "" {
		return 0, "", errors.New("gh: create check run: name and head sha are required")
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

// UpdateCheckRun changes a check run; see CheckRun for what is left as it is.
func (c *Client) UpdateCheckRun(ctx context.Context, owner, repo string, id int64, cr CheckRun) error {
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
func (c *Client) checkRunBody(cr CheckRun, create bool) (checkRunRequest, *checkOutput, [][]annotationJSON, error) {
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
	if len(cr.Actions) > 3 {
		return req, nil, nil, fmt.Errorf("%d actions, GitHub allows 3", len(cr.Actions))
	}
	switch {
	case cr.Actions != nil:
		acts := append([]Action{}, cr.Actions...)
		req.Actions = &acts
	case cr.Conclusion != "" && cr.Conclusion != ConclusionActionRequired:
		req.Actions = &[]Action{}
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

func normalizeAnnotations(in []Annotation) []annotationJSON {
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
