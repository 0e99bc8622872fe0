package githubtest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-github/v60/github"
)

func annotations(n int) []*github.CheckRunAnnotation {
	out := make([]*github.CheckRunAnnotation, n)
	for i := range out {
		out[i] = &github.CheckRunAnnotation{Path: ptr("a.go"), StartLine: ptr(i + 1), EndLine: ptr(i + 1),
			AnnotationLevel: ptr("failure"), Message: ptr(fmt.Sprintf("problem %d", i))}
	}
	return out
}

func TestCheckRuns(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	sha := s.Branch("octo", "hello", "main")

	cr, resp, err := gh.Checks.CreateCheckRun(ctx, "octo", "hello", github.CreateCheckRunOptions{
		Name: "akira / T1", HeadSHA: sha, Status: ptr("in_progress"), ExternalID: ptr("run-1:T1"),
		Output: &github.CheckRunOutput{Title: ptr("Working"), Summary: ptr("attempt 1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || cr.GetStatus() != "in_progress" || cr.GetHeadSHA() != sha ||
		cr.GetExternalID() != "run-1:T1" || cr.GetApp().GetID() != s.AppID() || cr.Conclusion != nil {
		t.Errorf("created = %d %q %q %q", resp.StatusCode, cr.GetStatus(), cr.GetHeadSHA(), cr.GetExternalID())
	}

	// Annotations accumulate over updates, 50 at most per request.
	for _, n := range []int{50, 10} {
		_, _, err := gh.Checks.UpdateCheckRun(ctx, "octo", "hello", cr.GetID(), github.UpdateCheckRunOptions{
			Output: &github.CheckRunOutput{Title: ptr("Failing"), Summary: ptr("tests fail"), Annotations: annotations(n)},
		})
		if err != nil {
			t.Fatalf("update with %d annotations: %v", n, err)
		}
	}
	done, _, err := gh.Checks.UpdateCheckRun(ctx, "octo", "hello", cr.GetID(), github.UpdateCheckRunOptions{
		Conclusion: ptr("action_required"),
		Output:     &github.CheckRunOutput{Title: ptr("Needs a human"), Summary: ptr("stuck"), Text: ptr("details")},
		Actions: []*github.CheckRunAction{
			{Label: "Approve", Description: "Accept the task as it is", Identifier: "approve"},
			{Label: "Retry", Description: "Try again", Identifier: "retry"},
			{Label: "Skip", Description: "Skip this task", Identifier: "skip"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if done.GetStatus() != "completed" || done.GetConclusion() != "action_required" || done.CompletedAt == nil ||
		done.GetOutput().GetAnnotationsCount() != 60 || done.GetName() != "akira / T1" {
		t.Errorf("completed = %q %q annotations=%d name=%q", done.GetStatus(), done.GetConclusion(),
			done.GetOutput().GetAnnotationsCount(), done.GetName())
	}

	got, ok := s.CheckRun(cr.GetID())
	if !ok || len(got.Annotations) != 60 || got.Annotations[59].Message != "problem 9" || got.Title != "Needs a human" ||
		got.Summary != "stuck" || got.Text != "details" || len(got.Actions) != 3 || got.Actions[1].Identifier != "retry" ||
		got.Updates != 3 || got.Conclusion != "action_required" {
		t.Errorf("state = %+v", got)
	}
	if runs := s.CheckRuns("octo", "hello"); len(runs) != 1 || runs[0].ID != cr.GetID() {
		t.Errorf("check runs = %+v", runs)
	}
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "octo", "hello", 1, github.UpdateCheckRunOptions{}); statusOf(t, err) != http.StatusNotFound {
		t.Errorf("update unknown run: %v, want 404", err)
	}
}

func TestCheckRunLimits(t *testing.T) {
	s, repo := newRepoServer(t)
	ctx := context.Background()
	gh, _ := installationClient(t, s, repo.InstallationID)
	sha := s.Branch("octo", "hello", "main")
	cr, _, err := gh.Checks.CreateCheckRun(ctx, "octo", "hello", github.CreateCheckRunOptions{Name: "c", HeadSHA: sha})
	if err != nil {
		t.Fatal(err)
	}
	if cr.GetStatus() != "queued" {
		t.Errorf("default status %q, want queued", cr.GetStatus())
	}
	out := func(o github.CheckRunOutput) *github.CheckRunOutput { return &o }
	long := strings.Repeat("x", maxOutputText+1)
	tests := []struct {
		name   string
		create *github.CreateCheckRunOptions
		update *github.UpdateCheckRunOptions
	}{
		{name: "51 annotations", update: &github.UpdateCheckRunOptions{
			Output: out(github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s"), Annotations: annotations(51)})}},
		{name: "summary too long", update: &github.UpdateCheckRunOptions{
			Output: out(github.CheckRunOutput{Title: ptr("t"), Summary: &long})}},
		{name: "text too long", create: &github.CreateCheckRunOptions{Name: "c", HeadSHA: sha,
			Output: out(github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s"), Text: &long})}},
		{name: "output without title", create: &github.CreateCheckRunOptions{Name: "c", HeadSHA: sha,
			Output: out(github.CheckRunOutput{Summary: ptr("s")})}},
		{name: "output without summary", update: &github.UpdateCheckRunOptions{
			Output: out(github.CheckRunOutput{Title: ptr("t")})}},
		{name: "completed without conclusion", update: &github.UpdateCheckRunOptions{Status: ptr("completed")}},
		{name: "unknown conclusion", update: &github.UpdateCheckRunOptions{Conclusion: ptr("great")}},
		{name: "annotation without message", update: &github.UpdateCheckRunOptions{
			Output: out(github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s"), Annotations: []*github.CheckRunAnnotation{
				{Path: ptr("a"), StartLine: ptr(1), EndLine: ptr(1), AnnotationLevel: ptr("failure")}}})}},
		{name: "bad annotation level", update: &github.UpdateCheckRunOptions{
			Output: out(github.CheckRunOutput{Title: ptr("t"), Summary: ptr("s"), Annotations: []*github.CheckRunAnnotation{
				{Path: ptr("a"), StartLine: ptr(1), EndLine: ptr(1), AnnotationLevel: ptr("error"), Message: ptr("m")}}})}},
		{name: "four actions", update: &github.UpdateCheckRunOptions{Actions: []*github.CheckRunAction{
			{Label: "a", Description: "a", Identifier: "a"}, {Label: "b", Description: "b", Identifier: "b"},
			{Label: "c", Description: "c", Identifier: "c"}, {Label: "d", Description: "d", Identifier: "d"}}}},
		{name: "label too long", update: &github.UpdateCheckRunOptions{Actions: []*github.CheckRunAction{
			{Label: strings.Repeat("l", 21), Description: "d", Identifier: "i"}}}},
		{name: "description too long", update: &github.UpdateCheckRunOptions{Actions: []*github.CheckRunAction{
			{Label: "l", Description: strings.Repeat("d", 41), Identifier: "i"}}}},
		{name: "identifier too long", update: &github.UpdateCheckRunOptions{Actions: []*github.CheckRunAction{
			{Label: "l", Description: "d", Identifier: strings.Repeat("i", 21)}}}},
		{name: "unknown head sha", create: &github.CreateCheckRunOptions{Name: "c", HeadSHA: strings.Repeat("a", 40)}},
		{name: "missing name", create: &github.CreateCheckRunOptions{HeadSHA: sha}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.create != nil {
				_, _, err = gh.Checks.CreateCheckRun(ctx, "octo", "hello", *tc.create)
			} else {
				_, _, err = gh.Checks.UpdateCheckRun(ctx, "octo", "hello", cr.GetID(), *tc.update)
			}
			var er *github.ErrorResponse
			if !errors.As(err, &er) || er.Response.StatusCode != http.StatusUnprocessableEntity || er.Message == "" {
				t.Errorf("err = %v, want 422 with a message", err)
			}
		})
	}
	// Exactly at the limits is fine.
	exact := strings.Repeat("x", maxOutputText)
	if _, _, err := gh.Checks.UpdateCheckRun(ctx, "octo", "hello", cr.GetID(), github.UpdateCheckRunOptions{
		Output: &github.CheckRunOutput{Title: ptr("t"), Summary: &exact, Text: &exact, Annotations: annotations(50)},
		Actions: []*github.CheckRunAction{{Label: strings.Repeat("l", 20), Description: strings.Repeat("d", 40),
			Identifier: strings.Repeat("i", 20)}},
	}); err != nil {
		t.Errorf("at the limits: %v", err)
	}
	if got, _ := s.CheckRun(cr.GetID()); got.Updates != 1 || len(got.Annotations) != 50 || got.Status != "queued" {
		t.Errorf("rejected updates changed state: %+v", got)
	}
}
