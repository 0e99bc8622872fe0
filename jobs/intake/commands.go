package intake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/publish"

	"github.com/akira-bot/akira/jobs/command"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/templates"
)

// commandHandler runs a command whose author may run it, on the issue or pull request of in.
type commandHandler func(h *Intake, ctx context.Context, in *intake, acc access, cmd command.Command) (string, error)

// commandHandlers are the handlers of the commands the intake runs, one each. The four decisions go
// to commandDecision before this list is read, and help is answered by the parser. A new command is
// a constant and a pattern in jobs/command and a line here.
var commandHandlers = map[command.CommandName]commandHandler{
	command.CmdRun: (*Intake).commandRun,
	command.CmdPlan: func(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
		return h.commandPlan(ctx, in, cmd)
	},
	command.CmdFix: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		// /akira fix acts in a review comment (the review intake); in a conversation comment the
		// reply says where it goes.
		if err := in.reply(ctx, in.comment().Number, publish.CommandElsewhereText(command.CmdFix)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	},
	command.CmdStop: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		return h.commandStop(ctx, in)
	},
	command.CmdPause:  pauseCommand,
	command.CmdResume: pauseCommand,
	command.CmdRollback: func(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
		return h.commandRollback(ctx, in, cmd)
	},
	command.CmdRemember: memoryCommand,
	command.CmdForget:   memoryCommand,
	command.CmdStatus: func(h *Intake, ctx context.Context, in *intake, _ access, _ command.Command) (string, error) {
		return h.commandStatus(ctx, in)
	},
}

func pauseCommand(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
	return h.commandPause(ctx, in, cmd)
}

func memoryCommand(h *Intake, ctx context.Context, in *intake, _ access, cmd command.Command) (string, error) {
	return h.commandMemory(ctx, in, cmd)
}

func (h *Intake) commandStatus(ctx context.Context, in *intake) (string, error) {
	c := in.comment()
	text, err := publish.StatusText(ctx, h.d.Store.Records, in.p.Owner, in.p.Repo, c.Number)
	if err != nil {
		return "", err
	}
	if err := in.reply(ctx, c.Number, text); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultReplied, nil
}

// commandStop asks the job working on the run of this issue or pull request to stop it.
func (h *Intake) commandStop(ctx context.Context, in *intake) (string, error) {
	c := in.comment()
	run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, c.Number)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	data := templates.StopReply{}
	if run != nil {
		data.RunID, data.State = run.ID, run.Status.Label()
		if _, data.Asked, err = h.d.Store.RequestStop(ctx, run.ID, c.Author, false); err != nil {
			return "", err
		}
	}
	if err := in.reply(ctx, c.Number, publish.Render("stop_reply", data, "`/akira stop`: run "+data.RunID+" is "+data.State+".")); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	if data.Asked {
		return metrics.ResultAccepted, nil
	}
	return metrics.ResultReplied, nil
}

// commandPause pauses (/akira pause [--now]) or resumes (/akira resume) the run of the issue or pull
// request.
func (h *Intake) commandPause(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.comment()
	run, err := h.d.Store.ByNumber(ctx, in.p.Owner, in.p.Repo, c.Number)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	data := templates.PauseReply{Now: cmd.Now, Resume: cmd.Name == command.CmdResume}
	if run != nil {
		data.RunID, data.State = run.ID, run.Status.Label()
		if data.Resume {
			run, data.Asked, err = h.d.Store.Resume(ctx, run.ID, c.Author)
		} else {
			run, data.Asked, err = h.d.Store.RequestPause(ctx, run.ID, c.Author, cmd.Now)
		}
		if err != nil {
			return "", err
		}
		if data.Asked && len(run.Outbox) > 0 {
			// A resume queues the next job: the publisher performs it (the relay repairs a crash here).
			if _, err := h.pub.Publish(ctx, in.gh, run, in.log); err != nil {
				return "", err
			}
		}
	}
	if err := in.reply(ctx, c.Number, publish.Render("pause_reply", data, "`/akira "+string(cmd.Name)+"`: run "+data.RunID+" is "+data.State+".")); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	if data.Asked {
		return metrics.ResultAccepted, nil
	}
	return metrics.ResultReplied, nil
}

// commandMemory adds (/akira remember) or removes (/akira forget) a lesson of the repository.
func (h *Intake) commandMemory(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.comment()
	mem := h.d.Store.Lessons(in.p.InstallationID, in.p.Owner, in.p.Repo)
	data := templates.MemoryReply{ID: cmd.TaskID, Remembered: cmd.Name == command.CmdRemember}
	if cmd.Name == command.CmdRemember {
		// The id comes from the comment: a retried or redelivered command keeps one lesson.
		sum := sha256.Sum256([]byte("remember:" + strconv.FormatInt(c.ID, 10)))
		l, err := mem.Add(ctx, lessons.Lesson{ID: "L" + hex.EncodeToString(sum[:4]), Text: cmd.Guidance, Origin: lessons.OriginPerson, Source: "note by @" + c.Author, Author: c.Author})
		if err != nil {
			return "", err
		}
		data.ID = l.ID
	} else {
		found, err := mem.Forget(ctx, cmd.TaskID)
		if err != nil {
			return "", err
		}
		data.Found = found
	}
	if err := in.reply(ctx, c.Number, publish.Render("memory_reply", data, "`/akira "+string(cmd.Name)+"`: "+data.ID)); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultReplied, nil
}

// commandRollback hands /akira rollback to a job, which takes the branch's lock.
func (h *Intake) commandRollback(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.comment()
	err := h.d.Enqueuer.EnqueueRollback(ctx, queue.RollbackPayload{TaskHeader: in.p.By(c.Author), Number: c.Number, CommentID: c.ID, TaskID: cmd.TaskID, Retry: cmd.Retry,
		Guidance: cmd.Guidance})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandPlan(ctx context.Context, in *intake, cmd command.Command) (string, error) {
	c := in.comment()
	if c.OnPullRequest {
		if err := in.reply(ctx, c.Number, publish.CommandElsewhereText(command.CmdPlan)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	err := h.d.Enqueuer.EnqueuePlan(ctx, queue.PlanPayload{TaskHeader: in.p.By(c.Author), DefaultBranch: in.p.DefaultBranch, Number: c.Number, CommentID: c.ID,
		Guidance: cmd.Guidance})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandDecision(ctx context.Context, in *intake, d runner.DecisionKind, guidance string) (string, error) {
	c := in.comment()
	err := h.d.Enqueuer.EnqueueResume(ctx, queue.ResumePayload{TaskHeader: in.p.By(c.Author), CommentID: c.ID, Number: c.Number, Decision: d, Guidance: guidance,
		Recovered: in.recovered, AnsweredAt: in.answeredAt})
	if err := queue.Enqueued(err); err != nil {
		return "", err
	}
	if !in.recovered {
		in.react(ctx, c.ID)
	}
	return metrics.ResultAccepted, nil
}

func (h *Intake) commandRun(ctx context.Context, in *intake, acc access, cmd command.Command) (string, error) {
	c := in.comment()
	rc, err := h.configOf(ctx, in, acc)
	if ce, bad := flow.AsRepoConfigError(err); bad {
		if err := in.reply(ctx, c.Number, publish.ConfigErrorText(ce, "start the run", in.p.RepoURL, in.p.DefaultBranch)); err != nil {
			return "", err
		}
		return metrics.ResultReplied, nil
	}
	if err != nil {
		return "", err
	}
	if !rc.Triggers.IssueComment {
		return metrics.ResultNoop, nil
	}
	run := queue.RunPayload{TaskHeader: in.p.By(c.Author),
		DefaultBranch: in.p.DefaultBranch, Trigger: lifecycle.TriggerIssue, Number: c.Number, CommentID: c.ID, Path: cmd.Path,
		TrustPlan: cmd.TrustPlan, BudgetUSD: cmd.BudgetUSD, Confirm: cmd.Confirm, AllowRedBase: cmd.AllowRedBase}
	if plan, line, ok := roadmap.InlinePlan(c.Body, "/akira run"); ok && !c.OnPullRequest && cmd.Path == "" {
		// A plan pasted under the command runs like an issue's checklist; one that cannot be read is
		// answered now, before anything is queued.
		if _, err := roadmap.ParseMarkdown("comment", []byte(plan)); err != nil {
			problem := inlinePlanProblem(err, line-1)
			if err := in.reply(ctx, c.Number, publish.Render("inline_plan_error", templates.InlinePlanError{Problem: problem},
				"Akira did not start: the plan under your /akira run cannot be read: "+problem)); err != nil {
				return "", err
			}
			return metrics.ResultReplied, nil
		}
		run.Plan = command.CapUserText(plan)
	}
	if c.OnPullRequest {
		pr, err := in.gh.GetPullRequest(ctx, in.p.Owner, in.p.Repo, c.Number)
		if err != nil {
			return "", fmt.Errorf("jobs: pull request #%d: %w", c.Number, err)
		}
		switch {
		case pr.HeadRepo == "":
			// The fork was deleted: nothing shows whose work the head is.
			if err := in.reply(ctx, c.Number, publish.ForkRefusalText()); err != nil {
				return "", err
			}
			return metrics.ResultRefused, nil
		case flow.IsFork(pr.HeadRepo, in.p.Owner, in.p.Repo):
			if late, err := h.forkHeadAfterCommand(ctx, in, c, pr.HeadSHA); err != nil || late != "" {
				return late, err
			}
			// A writer asked: the run starts a branch of this repository at the head as it is now,
			// and never takes in what the fork pushes after this moment.
			run.Trigger, run.HeadSHA = lifecycle.TriggerFork, pr.HeadSHA
		default:
			run.Trigger, run.Branch, run.HeadSHA = lifecycle.TriggerPullRequest, pr.HeadRef, pr.HeadSHA
		}
	}
	if err := queue.Enqueued(h.d.Enqueuer.EnqueueRun(ctx, run)); err != nil {
		return "", err
	}
	in.react(ctx, c.ID)
	return metrics.ResultAccepted, nil
}

// forkHeadAfterCommand refuses a writer's /akira run on a fork's pull request whose head GitHub had
// not shown before the comment was written: the fork pushed after the command (before this job read
// the pull request, which can be long after under a rate limit), so the head may hold commits the
// writer never read. Both times are GitHub's (the comment's created_at, the pull request's
// updated_at in the webhook that showed the head), so no clock of Akira's is trusted. A head no
// webhook had shown is remembered as seen at this comment: the writer's next command, once they
// read it, runs it. The result is the job's, empty when the head may run.
func (h *Intake) forkHeadAfterCommand(ctx context.Context, in *intake, c *queue.CommentIntake, head string) (string, error) {
	seen, ok, err := h.d.Store.ForkHeadSeen(ctx, in.p.Owner, in.p.Repo, c.Number, head)
	if err != nil {
		return "", err
	}
	if ok && !c.CreatedAt.IsZero() && seen.Before(c.CreatedAt) {
		return "", nil
	}
	if err := h.d.Store.SawForkHead(ctx, in.p.Owner, in.p.Repo, c.Number, head, c.CreatedAt); err != nil {
		return "", err
	}
	in.log.Warn("intake: a fork's head newer than the command that would run it", "number", c.Number, "head", head,
		"command_at", c.CreatedAt, "head_seen_at", seen, "head_seen", ok)
	refused := templates.ForkRefused{Late: head, Unseen: !ok}
	if err := in.reply(ctx, c.Number, publish.Render("fork_refused", refused,
		"Akira did not start: the fork's head "+head+" is newer than the /akira run that asked for it.")); err != nil {
		return "", err
	}
	return metrics.ResultRefused, nil
}

// configOf is the repository configuration, reusing what authorize read for the allowlist.
func (h *Intake) configOf(ctx context.Context, in *intake, acc access) (config.Repo, error) {
	if acc.cfg != nil {
		return *acc.cfg, nil
	}
	return h.d.RepoConfig(ctx, in.gh, in.p.Owner, in.p.Repo, in.p.DefaultBranch)
}

// inlinePlanProblem says what is wrong with a plan pasted in a comment, with the lines of the comment
// (the plan starts offset lines into it).
func inlinePlanProblem(err error, offset int) string {
	var list roadmap.Errors
	if !errors.As(err, &list) {
		var one *roadmap.Error
		if !errors.As(err, &one) {
			return err.Error()
		}
		list = roadmap.Errors{one}
	}
	var out []string
	for _, e := range list {
		c := *e
		c.File = "comment"
		if c.Line > 0 {
			c.Line += offset
		}
		out = append(out, c.Error())
	}
	return strings.Join(out, "; ")
}
