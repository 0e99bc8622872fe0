package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/app/admin"
	"github.com/akira-bot/akira/app/remote"
	"github.com/akira-bot/akira/jobs/store"
)

func init() { subcommands = append(subcommands, newHandoffCmd) }

// Exit statuses of akira handoff and akira status --server, for scripts.
const (
	exitRunFailed   = 1   // the run failed or was aborted
	exitUsage       = 2   // bad arguments, no AKIRA_SERVER or AKIRA_TOKEN, not a checkout
	exitRunStopped  = 3   // the run was stopped (a person may continue it)
	exitRefused     = 4   // the server refused (a plan that cannot be read, a token without the right) or cannot be reached
	exitInterrupted = 130 // Ctrl-C while following: the run goes on
)

// remoteClient is the client of AKIRA_SERVER with AKIRA_TOKEN.
func remoteClient() (*remote.Client, error) {
	c, err := remote.New(os.Getenv("AKIRA_SERVER"), os.Getenv("AKIRA_TOKEN"), nil)
	if err != nil {
		return nil, withExit(exitUsage, err)
	}
	// What it starts is audited as the command line's (akira mcp's server says MCP instead).
	return c.Via(store.ViaCLI), nil
}

// refused maps an API error to its exit status.
func refused(err error) error {
	if errors.Is(err, context.Canceled) {
		return withExit(exitInterrupted, nil)
	}
	return withExit(exitRefused, err)
}

func newHandoffCmd() *cobra.Command {
	var o remote.HandoffOptions
	var follow bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "handoff PLAN",
		Short: "Hand a plan off to your team's Akira: push the branch, start the run there, print its URL",
		Long: `Handoff starts a run of PLAN on the Akira server at AKIRA_SERVER (its admin address) with the API
token AKIRA_TOKEN (scope start or control), from the git checkout you are in: it pushes the current
branch when GitHub does not have its commit, and the run starts from that branch and opens its pull
request into it. A PLAN committed on the branch runs from there (any format Akira reads); a markdown
PLAN with changes you have not committed is sent as text. Handing off the same plan on the same
commit twice starts one run (the Idempotency-Key is derived from the commit and every field of
the request; --key sets your own).

--follow prints the run's progress (task started, checkpoint, escalation, status) until the run ends;
Ctrl-C stops following, not the run.

Exit status: 0 the run was started (with --follow: it succeeded); 1 it failed or was aborted;
2 bad arguments, no AKIRA_SERVER or AKIRA_TOKEN, not a checkout; 3 it was stopped; 4 the server
refused (a plan that cannot be read, a token for another repository) or could not be reached;
130 interrupted while following.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := remoteClient()
			if err != nil {
				return err
			}
			if o.Budget < 0 {
				return withExit(exitUsage, errors.New("--budget must be positive"))
			}
			o.Plan = args[0]
			if _, err := os.Stat(o.Plan); err != nil {
				return withExit(exitUsage, fmt.Errorf("plan: %w", err))
			}
			out, errw := cmd.OutOrStdout(), cmd.ErrOrStderr()
			h, err := c.Handoff(ctx, o, errw)
			if errors.Is(err, remote.ErrLocal) {
				return withExit(exitUsage, err)
			}
			if err != nil {
				return refused(err)
			}
			what := "started"
			if h.Repeated {
				what = "already started (same plan, same commit)"
			}
			fmt.Fprintf(out, "%s\n", h.URL)
			fmt.Fprintf(errw, "akira: run %s %s on %s, branch %s from %s\n", h.ID, what, h.Repo, h.Branch, h.Base)
			if e := h.Estimate; e != nil {
				fmt.Fprintf(errw, "akira: about %s (%d tasks × %s, this repository's median task time)\n",
					(time.Duration(e.Seconds) * time.Second).Round(time.Minute), e.Tasks,
					(time.Duration(e.MedianTaskSeconds) * time.Second).Round(time.Second))
			}
			if !follow {
				return nil
			}
			return followRun(ctx, c, h.ID, interval, out)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&follow, "follow", false, "print the run's progress until it ends")
	f.DurationVar(&interval, "interval", 3*time.Second, "how often --follow asks the server")
	f.StringVar(&o.Dir, "dir", "", "the checkout (default: the working directory)")
	f.StringVar(&o.Repo, "repo", "", "the repository on GitHub, owner/name (default: read from the remote's URL)")
	f.StringVar(&o.Remote, "remote", "origin", "the git remote that is the repository on GitHub")
	f.StringVar(&o.Base, "base", "", "the branch the run starts from and its pull request goes into (default: the current branch; another is not pushed)")
	f.BoolVar(&o.NoPush, "no-push", false, "do not push the branch; the run starts from what GitHub has")
	f.StringVar(&o.Agent, "agent", "", "the operator's agent profile to use")
	f.Float64Var(&o.Budget, "budget", 0, "the run's cost limit in US dollars")
	f.StringVar(&o.Reference, "reference", "", "your conversation or ticket id, shown on the pull request")
	f.StringVar(&o.Key, "key", "", "the Idempotency-Key (default: derived from the commit and every field of the request)")
	return cmd
}

// followRun prints a run's progress until it ends, and exits as the handoff's documentation says.
func followRun(ctx context.Context, c *remote.Client, id string, interval time.Duration, out io.Writer) error {
	run, err := c.Follow(ctx, id, interval, func(ev remote.Event) {
		fmt.Fprintf(out, "%s %s\n", time.Now().Format("15:04:05"), ev.Text)
	})
	if err != nil {
		return refused(err)
	}
	return runExit(run)
}

// runExit is the exit status of an ended run.
func runExit(run admin.RunDetail) error {
	switch run.Status {
	case "succeeded":
		return nil
	case "stopped":
		return withExit(exitRunStopped, nil)
	default:
		return withExit(exitRunFailed, nil)
	}
}

// remoteStatus shows a run on the server (or the newest runs), for akira status --server.
func remoteStatus(ctx context.Context, out io.Writer, server, runID, repo string) error {
	if server = strings.TrimSpace(server); server == "" {
		server = os.Getenv("AKIRA_SERVER")
	}
	c, err := remote.New(server, os.Getenv("AKIRA_TOKEN"), nil)
	if err != nil {
		return withExit(exitUsage, err)
	}
	if runID == "" {
		runs, err := c.Runs(ctx, repo, nil, 20)
		if err != nil {
			return refused(err)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "RUN\tREPOSITORY\tSTATUS\tTASKS\tBRANCH\tPULL REQUEST")
		for _, r := range runs {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%s\t%s\n", r.ID, r.Repo, r.Status, r.TasksDone, r.TasksTotal, r.Branch, r.PRURL)
		}
		return tw.Flush()
	}
	run, err := c.Run(ctx, runID)
	if err != nil {
		return refused(err)
	}
	fmt.Fprintf(out, "run %s · %s · %s · branch %s", run.ID, run.Repo, run.Status, run.Branch)
	if run.PRURL != "" {
		fmt.Fprintf(out, " · %s", run.PRURL)
	}
	if run.Reference != "" {
		fmt.Fprintf(out, " · reference %s", run.Reference)
	}
	fmt.Fprintln(out)
	if run.Error != "" {
		fmt.Fprintf(out, "error: %s\n", run.Error)
	}
	if n := len(run.Synced); n > 0 {
		fmt.Fprintf(out, "brought up to date with %s\n", shortSynced(run.Synced[n-1]))
	}
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSTATUS\tATTEMPTS\tCOMMIT")
	for _, t := range run.Tasks {
		commit := t.Checkpoint
		if len(commit) > 7 {
			commit = commit[:7]
		}
		fmt.Fprintf(tw, "%s %s\t%s\t%d\t%s\n", t.ID, strings.Join(strings.Fields(t.Title), " "), t.Status, t.Attempts, commit)
	}
	_ = tw.Flush()
	for i, p := range run.Parked {
		fmt.Fprintf(out, "\nescalation %d: task %s needs a decision (%s) — answer with POST %s/api/v1/runs/%s/escalations/%d\n",
			i+1, p.TaskID, p.Reason, strings.TrimRight(server, "/"), run.ID, i+1)
	}
	switch run.Status {
	case "succeeded":
		return nil
	case "parked":
		return withExit(3, nil)
	case "queued", "running", "waiting_ci":
		return withExit(4, nil)
	case "stopped":
		return withExit(5, nil)
	}
	return withExit(exitRunFailed, nil)
}
