package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner"
)

func init() { subcommands = append(subcommands, newStatusCmd) }

// shortSynced is a merged base commit ("<base>@<sha>") as the merge's own note says it: its sha cut to
// 12 characters.
func shortSynced(s string) string {
	if base, sha, ok := strings.Cut(s, "@"); ok && len(sha) > 12 {
		return base + "@" + sha[:12]
	}
	return s
}

func newStatusCmd() *cobra.Command {
	var repo, roadmapPath, branch, base, workDir, server, runID, attempt string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show where a branch stands: the tasks done (from checkpoint trailers), parked and pending",
		Long: `Status reads the branch on the remote, as a later akira run would continue it: tasks done (by
their Akira-Task trailers or ticked in the plan), parked (work waiting under refs/akira/parked/...)
and pending. It changes nothing. Exit status: 0 when everything is done, 3 when a task is parked,
4 when tasks are pending.

With --server it reads a run on the Akira server instead (AKIRA_SERVER, AKIRA_TOKEN; --server URL
overrides the address): the run given with --run, else the newest runs (of --repo owner/name when
given). Exit status of a run: 0 succeeded, 1 failed or aborted, 3 parked, 4 queued or running,
5 stopped.

With --attempt TASK/N it prints attempt N of TASK of the newest local run of the repository (of
--branch when given, of --run ID when given) as akira run recorded it: each model call with its
tokens and cost, each step the agent reported, each file it changed, each verification command,
each egress refusal, the judge's verdict and the end, with the time from the attempt's start and
the cost so far.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("server") {
				if attempt != "" {
					return withExit(2, errors.New("--attempt reads the attempts of local runs: leave out --server"))
				}
				return remoteStatus(ctx, cmd.OutOrStdout(), server, runID, repo)
			}
			var task string
			var n int
			if attempt != "" {
				var err error
				if task, n, err = parseAttempt(attempt); err != nil {
					return withExit(2, err)
				}
			}
			r, err := resolveRepo(ctx, repo)
			if err != nil {
				return withExit(2, err)
			}
			if attempt != "" {
				a, err := findAttempt(runsDir(), r, branch, runID, task, n)
				if err != nil {
					return withExit(1, err)
				}
				printAttempt(cmd.OutOrStdout(), a, task, n)
				return nil
			}
			rep, err := runner.BranchStatus(ctx, runner.StatusOptions{Repo: r, Roadmap: roadmapPath, Branch: branch, Base: base,
				WorkDir: workDir, Cache: localCache(), GitAuth: gitAuthFromEnv(r)})
			if errors.Is(err, runner.ErrInvalidPlan) {
				return withExit(2, err)
			}
			if err != nil {
				return withExit(1, err)
			}
			out := cmd.OutOrStdout()
			state := "not pushed yet"
			if rep.Exists {
				state = "on the remote"
			}
			fmt.Fprintf(out, "branch %s (%s, from %s) · plan %s\n", rep.Branch, state, rep.Base, rep.Roadmap)
			if rep.Synced != "" {
				fmt.Fprintf(out, "brought up to date with %s\n", shortSynced(rep.Synced))
			}
			fmt.Fprintln(out)
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tSTATUS\tCOMMIT\tNOTE")
			count := map[runner.TaskStatus]int{}
			for _, t := range rep.Tasks {
				count[t.Status]++
				commit := t.Commit
				if len(commit) > 7 {
					commit = commit[:7]
				}
				status := string(t.Status)
				if t.Status == runner.TaskParked {
					status = "needs a decision" // the one phrase people read; the exit status says parked
				}
				fmt.Fprintf(tw, "%s %s\t%s\t%s\t%s\n", t.ID, strings.Join(strings.Fields(t.Title), " "), status, commit, t.Note)
			}
			_ = tw.Flush()
			fmt.Fprintf(out, "\n%d done · %d need a decision · %d pending\n", count[runner.TaskDone], count[runner.TaskParked], count[runner.TaskPending])
			switch {
			case count[runner.TaskParked] > 0:
				return withExit(3, nil)
			case count[runner.TaskPending] > 0:
				return withExit(4, nil)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&repo, "repo", "", "local repository path or clone URL (default: the git repository of the current directory)")
	fl.StringVar(&roadmapPath, "roadmap", "", "the plan's path (default: roadmap of .github/akira.yml, else ROADMAP.md)")
	fl.StringVar(&branch, "branch", "", "the branch (default: the one akira run uses for the plan)")
	fl.StringVar(&base, "base", "", "the base branch (default: the remote's default branch)")
	fl.StringVar(&workDir, "work-dir", "", "directory for the temporary clone (default: $TMPDIR)")
	fl.StringVar(&server, "server", "", "read a run on the Akira server (AKIRA_SERVER when given without a value)")
	fl.Lookup("server").NoOptDefVal = " "
	fl.StringVar(&runID, "run", "", "with --server: the run to show; with --attempt: the local run")
	fl.StringVar(&attempt, "attempt", "", "show attempt N of a task of a local run, TASK/N (e.g. 1.2/3): its timeline")
	return cmd
}
