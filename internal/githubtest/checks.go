package githubtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
	"unicode/utf8"
)

// Limits of the checks API.
const (
	maxAnnotationsPerRequest = 50
	maxOutputText            = 65535
	maxActions               = 3
	maxActionLabel           = 20
	maxActionDescription     = 40
	maxActionIdentifier      = 20
)

var (
	checkStatuses    = []string{"queued", "in_progress", "completed", "waiting", "requested", "pending"}
	checkConclusions = []string{"action_required", "cancelled", "failure", "neutral", "success", "skipped", "stale", "timed_out"}
	annotationLevels = []string{"notice", "warning", "failure"}
)

type checkRunInput struct {
	Name        *string `json:"name"`
	HeadSHA     *string `json:"head_sha"`
	DetailsURL  *string `json:"details_url"`
	ExternalID  *string `json:"external_id"`
	Status      *string `json:"status"`
	Conclusion  *string `json:"conclusion"`
	StartedAt   *string `json:"started_at"`
	CompletedAt *string `json:"completed_at"`
	Output      *struct {
		Title       *string           `json:"title"`
		Summary     *string           `json:"summary"`
		Text        *string           `json:"text"`
		Annotations []json.RawMessage `json:"annotations"`
	} `json:"output"`
	Actions []Action `json:"actions"`
	hasActs bool
}

// validate checks the input against GitHub's limits and returns the 422 message, or "".
func (in *checkRunInput) validate(create bool) (annotations []Annotation, msg string) {
	if in.Status != nil && !slices.Contains(checkStatuses, *in.Status) {
		return nil, fmt.Sprintf("Invalid request.\n\n%q is not a member of %v.", *in.Status, checkStatuses)
	}
	if in.Conclusion != nil && !slices.Contains(checkConclusions, *in.Conclusion) {
		return nil, fmt.Sprintf("Invalid request.\n\n%q is not a member of %v.", *in.Conclusion, checkConclusions)
	}
	if in.Status != nil && *in.Status == "completed" && in.Conclusion == nil {
		return nil, "Invalid request.\n\nNo conclusion provided; a conclusion is required when status is completed."
	}
	if in.CompletedAt != nil && in.Conclusion == nil {
		return nil, "Invalid request.\n\nNo conclusion provided; a conclusion is required with completed_at."
	}
	for _, t := range []*string{in.StartedAt, in.CompletedAt} {
		if t != nil {
			if _, err := time.Parse(time.RFC3339, *t); err != nil {
				return nil, fmt.Sprintf("Invalid request.\n\n%q is not a valid date-time.", *t)
			}
		}
	}
	if o := in.Output; o != nil {
		if create && o.Title == nil {
			return nil, "Invalid request.\n\n\"title\" wasn't supplied."
		}
		if o.Summary == nil {
			return nil, "Invalid request.\n\n\"summary\" wasn't supplied."
		}
		for name, v := range map[string]*string{"summary": o.Summary, "text": o.Text} {
			if v != nil && utf8.RuneCountInString(*v) > maxOutputText {
				return nil, fmt.Sprintf("Invalid request.\n\nOnly %d characters are allowed; %s is %d characters.",
					maxOutputText, name, utf8.RuneCountInString(*v))
			}
		}
		if len(o.Annotations) > maxAnnotationsPerRequest {
			return nil, fmt.Sprintf("Invalid request.\n\nOnly %d annotations are allowed per request; got %d.",
				maxAnnotationsPerRequest, len(o.Annotations))
		}
		for i, raw := range o.Annotations {
			var fields map[string]json.RawMessage
			var a Annotation
			if json.Unmarshal(raw, &fields) != nil || json.Unmarshal(raw, &a) != nil {
				return nil, fmt.Sprintf("Invalid request.\n\nannotation %d is not a valid object.", i)
			}
			for _, k := range []string{"path", "start_line", "end_line", "annotation_level", "message"} {
				if _, ok := fields[k]; !ok {
					return nil, fmt.Sprintf("Invalid request.\n\n%q wasn't supplied for annotation %d.", k, i)
				}
			}
			if !slices.Contains(annotationLevels, a.AnnotationLevel) {
				return nil, fmt.Sprintf("Invalid request.\n\n%q is not a member of %v.", a.AnnotationLevel, annotationLevels)
			}
			if a.StartLine < 1 || a.EndLine < a.StartLine {
				return nil, fmt.Sprintf("Invalid request.\n\nannotation %d has invalid lines %d-%d.", i, a.StartLine, a.EndLine)
			}
			annotations = append(annotations, a)
		}
	}
	if len(in.Actions) > maxActions {
		return nil, fmt.Sprintf("Invalid request.\n\nOnly %d actions are allowed; got %d.", maxActions, len(in.Actions))
	}
	for _, a := range in.Actions {
		switch {
		case a.Label == "" || a.Description == "" || a.Identifier == "":
			return nil, "Invalid request.\n\nactions need a label, a description and an identifier."
		case utf8.RuneCountInString(a.Label) > maxActionLabel:
			return nil, fmt.Sprintf("Invalid request.\n\naction label %q is longer than %d characters.", a.Label, maxActionLabel)
		case utf8.RuneCountInString(a.Description) > maxActionDescription:
			return nil, fmt.Sprintf("Invalid request.\n\naction description %q is longer than %d characters.", a.Description, maxActionDescription)
		case utf8.RuneCountInString(a.Identifier) > maxActionIdentifier:
			return nil, fmt.Sprintf("Invalid request.\n\naction identifier %q is longer than %d characters.", a.Identifier, maxActionIdentifier)
		}
	}
	return annotations, ""
}

func parseCheckInput(w http.ResponseWriter, r *http.Request) (*checkRunInput, bool) {
	var in checkRunInput
	var fields map[string]json.RawMessage
	raw, err := readBody(r)
	if err != nil || json.Unmarshal(raw, &in) != nil || json.Unmarshal(raw, &fields) != nil {
		writeError(w, http.StatusBadRequest, "Problems parsing JSON")
		return nil, false
	}
	_, in.hasActs = fields["actions"]
	return &in, true
}

// apply copies the input onto a check run; a conclusion completes it, as on GitHub.
func (c *checkRun) apply(in *checkRunInput, annotations []Annotation) {
	t := now()
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	// go-github always sends "name" on update, empty when the caller left it unset.
	if in.Name != nil && *in.Name != "" {
		c.Name = *in.Name
	}
	set(&c.DetailsURL, in.DetailsURL)
	set(&c.ExternalID, in.ExternalID)
	set(&c.Status, in.Status)
	if in.StartedAt != nil {
		c.StartedAt, _ = time.Parse(time.RFC3339, *in.StartedAt)
	}
	if in.Conclusion != nil {
		c.Conclusion, c.Status = *in.Conclusion, "completed"
	}
	if c.Status == "completed" {
		c.CompletedAt = t
		if in.CompletedAt != nil {
			c.CompletedAt, _ = time.Parse(time.RFC3339, *in.CompletedAt)
		}
	}
	if o := in.Output; o != nil {
		set(&c.Title, o.Title)
		set(&c.Summary, o.Summary)
		set(&c.Text, o.Text)
		c.Annotations = append(c.Annotations, annotations...)
	}
	if in.hasActs {
		c.Actions = slices.Clone(in.Actions)
	}
}

func (s *Server) createCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	in, ok := parseCheckInput(w, r)
	if !ok {
		return
	}
	if in.Name == nil || *in.Name == "" {
		writeInvalid(w, "CheckRun", "name", "missing_field", "")
		return
	}
	if in.HeadSHA == nil || *in.HeadSHA == "" {
		writeInvalid(w, "CheckRun", "head_sha", "missing_field", "")
		return
	}
	annotations, msg := in.validate(true)
	if msg != "" {
		writeUnprocessable(w, msg)
		return
	}
	sha, err := s.resolve(r.Context(), c.repo.dir, *in.HeadSHA)
	if err != nil || sha != *in.HeadSHA {
		writeUnprocessable(w, "No commit found for SHA: "+*in.HeadSHA)
		return
	}
	cr := &checkRun{repo: c.repo, suiteID: s.nextID("check_suite")}
	cr.ID = s.nextID("check_run")
	cr.Repo = c.repo.fullName()
	cr.HeadSHA = sha
	cr.Status = "queued"
	cr.StartedAt = now()
	cr.apply(in, annotations)
	s.checkRuns[cr.ID] = cr
	writeJSON(w, http.StatusCreated, s.checkRunJSON(cr))
}

func (s *Server) updateCheckRun(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := pathInt(w, r, "check_run_id")
	if !ok {
		return
	}
	cr := s.checkRuns[id]
	if cr == nil || cr.repo != c.repo {
		writeError(w, http.StatusNotFound, "Not Found")
		return
	}
	in, ok := parseCheckInput(w, r)
	if !ok {
		return
	}
	annotations, msg := in.validate(false)
	if msg != "" {
		writeUnprocessable(w, msg)
		return
	}
	cr.apply(in, annotations)
	cr.Updates++
	writeJSON(w, http.StatusOK, s.checkRunJSON(cr))
}
