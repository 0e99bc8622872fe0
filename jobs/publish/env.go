package publish

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/templates"
)

// The run's environment on GitHub: the setup and the base-branch health check each get a completed
// check run (`akira / setup`, `akira / base`) and a line in the summary. Neither is a status of the
// run's lifecycle: a failure of either ends the run through run_finished like any other error.
const (
	SetupCheckRunName = "akira / setup"
	BaseCheckRunName  = "akira / base"
	// SetupLogTask is the task id the setup's log is kept under: no task of a plan can have it.
	SetupLogTask = "_setup"
)

// LogURL is the address of an attempt's log on the API at publicURL; "" without one.
func LogURL(publicURL, runID, taskID string, attempt int) string {
	if publicURL == "" {
		return ""
	}
	return fmt.Sprintf("%s/api/v1/runs/%s/tasks/%s/attempts/%d/log", strings.TrimRight(publicURL, "/"),
		url.PathEscape(runID), url.PathEscape(taskID), attempt)
}

func (r *Reporter) setupFinished(ctx context.Context, ev runner.Event) error {
	res := ev.Setup
	if res == nil {
		return nil
	}
	if res.Proposed != "" {
		// Nothing ran: a line in the summary with the next edit, no check run.
		check := &lifecycle.EnvCheck{Passed: true, Proposed: true, Detail: ev.Message}
		return r.checks.envCheckRun(ctx, SetupCheckRunName, "", templates.EnvCheckRun{Kind: "setup"}, check, false, func(run *lifecycle.Run) **lifecycle.EnvCheck { return &run.Setup })
	}
	text := r.masker.Mask(res.Log)
	if err := r.store.SaveLog(ctx, r.runID, SetupLogTask, 1, text, r.logRetention); err != nil {
		r.pub.log.Warn("setup log not kept", "err", err)
	}
	data := templates.EnvCheckRun{Kind: "setup", Detected: res.Detected, LogURL: LogURL(r.publicURL, r.runID, SetupLogTask, 1)}
	for _, s := range res.Steps {
		data.Steps = append(data.Steps, templates.EnvStep{Command: s.Command, ExitCode: s.ExitCode, Limit: s.Limit, Duration: s.Duration})
	}
	if s := res.Snapshot; s != nil {
		data.Snapshot = &templates.EnvSnapshot{Restored: s.Restored, Taken: s.Taken, Files: s.Files}
	}
	failed := res.Failed()
	data.Passed = failed == nil
	if failed != nil {
		data.Failed, data.Limit, data.ExitCode, data.Tail = failed.Command, failed.Limit, failed.ExitCode, r.masker.Mask(failed.Tail)
	}
	title := "Setup passed"
	if s := res.Snapshot; s != nil && s.Restored {
		title = "Setup restored from its snapshot"
	}
	if failed != nil {
		title = "Setup failed: " + ClipText(failed.Command, 80)
		if failed.Limit != "" {
			title += " (" + failed.Limit + ")"
		}
	}
	check := &lifecycle.EnvCheck{Passed: data.Passed, Detail: ev.Message, Duration: res.Duration, LogURL: data.LogURL}
	return r.checks.envCheckRun(ctx, SetupCheckRunName, title, data, check, true, func(run *lifecycle.Run) **lifecycle.EnvCheck { return &run.Setup })
}

func (r *Reporter) baseChecked(ctx context.Context, ev runner.Event) error {
	b := ev.BaseCheck
	if b == nil {
		return nil
	}
	data := templates.EnvCheckRun{Kind: "base", Passed: b.Passed, Commit: ev.Commit, AllowRedBase: ev.AllowRedBase,
		Failed: b.Command, Tail: r.masker.Mask(b.Tail)}
	data.ExitCode = b.ExitCode
	title, detail := "The base branch is green", "green at `"+shortCommit(ev.Commit)+"`"
	if !b.Passed {
		title, detail = "The base branch fails "+ClipText(b.Command, 80), "fails `"+ClipText(b.Command, 80)+"` at `"+shortCommit(ev.Commit)+"`"
		if ev.AllowRedBase {
			detail += ", allowed (--allow-red-base)"
		}
	}
	check := &lifecycle.EnvCheck{Passed: b.Passed, Detail: detail, Commit: ev.Commit, Allowed: !b.Passed && ev.AllowRedBase}
	// A green base is a line in the summary; only a red one gets a check run (and the REST calls).
	return r.checks.envCheckRun(ctx, BaseCheckRunName, title, data, check, !b.Passed, func(run *lifecycle.Run) **lifecycle.EnvCheck { return &run.BaseCheck })
}

// AgentCheckRunName is the check run of an agent that cannot run at all (runner.EventAgentUnusable).
const AgentCheckRunName = "akira / agent"

// agentUnusable posts a failed check run naming what keeps the agent from running and the fix: no
// attempt was made, so no task's check run says it, and the run fails next (never an escalation:
// no decision fixes a CLI that is not installed).
func (r *Reporter) agentUnusable(ctx context.Context, ev runner.Event) error {
	head := cmp.Or(ev.Commit, r.head)
	if head == "" {
		return nil
	}
	cr := ports.CheckRun{Name: AgentCheckRunName, HeadSHA: head, Conclusion: ports.ConclusionFailure, Title: "The agent cannot run",
		Summary:    "Akira checked the agent before the first attempt:\n\n" + r.masker.Mask(ev.Message) + "\n\nFix it in the operator's configuration or in the repository, then start the run again.",
		ExternalID: ports.CheckRunExternalID(r.runID, "agent@env"), DetailsURL: r.run.PRURL, MayExist: true}
	if _, _, err := r.gh.CreateCheckRun(ctx, r.run.Owner, r.run.Repo, cr); err != nil {
		return fmt.Errorf("create %s check run: %w", AgentCheckRunName, err)
	}
	return nil
}

func shortCommit(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

// envCheckRun posts (when post) a completed check run for an environment step and records the step on
// the run; a failed step shows in the summary at once, a passed one with the next edit. A job that
// repeats the step (a retry, a continuation) updates the check run it posted before on the same head
// instead of adding one.
func (r *checkRuns) envCheckRun(ctx context.Context, name, title string, data templates.EnvCheckRun, check *lifecycle.EnvCheck, post bool, field func(*lifecycle.Run) **lifecycle.EnvCheck) error {
	text, err := templates.Render("env_checkrun", data)
	if err != nil {
		return err
	}
	conclusion := ports.ConclusionSuccess
	switch {
	case check.Allowed:
		conclusion = ports.ConclusionNeutral
	case !check.Passed:
		conclusion = ports.ConclusionFailure
	}
	cr := ports.CheckRun{Name: name, HeadSHA: r.head, Conclusion: conclusion, Title: title, Summary: text,
		ExternalID: ports.CheckRunExternalID(r.runID, strings.TrimPrefix(name, "akira / ")+"@env"), DetailsURL: cmp.Or(check.LogURL, r.run.PRURL)}
	switch {
	case !post:
	case r.head == "":
		r.pub.log.Warn("environment check run not posted: no head commit", "check", name)
	case (*field(r.run)) != nil && (*field(r.run)).CheckRunID != 0 && (*field(r.run)).Head == r.head:
		prev := *field(r.run)
		if err := r.gh.UpdateCheckRun(ctx, r.run.Owner, r.run.Repo, prev.CheckRunID, cr); err != nil {
			return fmt.Errorf("update %s check run: %w", name, err)
		}
		check.CheckRunID, check.CheckRunURL = prev.CheckRunID, prev.CheckRunURL
	default:
		// Posted at most once or twice a run: the lookup that saves a duplicate after a crash is cheap here.
		cr.MayExist = true
		id, u, err := r.gh.CreateCheckRun(ctx, r.run.Owner, r.run.Repo, cr)
		if err != nil {
			return fmt.Errorf("create %s check run: %w", name, err)
		}
		check.CheckRunID, check.CheckRunURL = id, u
	}
	if check.CheckRunID != 0 {
		check.Head = r.head
	}
	if err := r.record(ctx, func(run *lifecycle.Run) error {
		*field(run) = check
		return nil
	}); err != nil {
		return err
	}
	if check.Passed {
		return nil
	}
	return r.sums.summary(ctx)
}

// envSummary is the summary's environment line of a run; nil when it had neither setup nor check.
func envSummary(run *lifecycle.Run) *templates.EnvSummary {
	if run.Setup == nil && run.BaseCheck == nil {
		return nil
	}
	line := func(c *lifecycle.EnvCheck) *templates.EnvLine {
		if c == nil {
			return nil
		}
		return &templates.EnvLine{Passed: c.Passed, Detail: c.Detail, Duration: c.Duration, CheckRunURL: c.CheckRunURL,
			LogURL: c.LogURL, Allowed: c.Allowed, Proposed: c.Proposed}
	}
	return &templates.EnvSummary{Setup: line(run.Setup), Base: line(run.BaseCheck)}
}

// EnvOptions are the engine's options about the environment of a run's job.
func EnvOptions(opts *runner.Options, run *lifecycle.Run, st *store.Store, caches *env.Caches) {
	opts.AllowRedBase = run.AllowRedBase
	if caches != nil {
		// Never shared between installations: the scope names the installation and the repository.
		opts.DepCaches = caches
		opts.CacheScope = env.ScopeName("inst", strconv.FormatInt(run.InstallationID, 10), run.Owner, run.Repo)
	}
	if st != nil {
		opts.BaseMemory = st.BaseMemory(run.InstallationID, run.Owner, run.Repo)
	}
}
