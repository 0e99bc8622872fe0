package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner"
)

func init() { subcommands = append(subcommands, newRollbackCmd) }

func newRollbackCmd() *cobra.Command {
	var repo, roadmapPath, branch, base, workDir string
	var retry bool
	cmd := &cobra.Command{
		Use:   "rollback TASK [--retry [-- run flags...]]",
		Short: "Undo a task's checkpoint (and its dependents') with revert commits; --retry runs them again",
		Long: `Rollback reverts the checkpoint of TASK and of every later task that depends on it, newest first,
as revert commits on the branch (the history stays: nothing is force-pushed). Each revert carries an
Akira-Revert trailer, so the next akira run finds those tasks pending. A revert that conflicts pushes
nothing and shows the conflict (exit status 3). With --retry, akira run follows at once, with the same
repository, plan and branch, and the flags given after --.`,
		Example: `  akira rollback 1.2
  akira rollback 1.2 --retry -- --agent-cmd "claude -p --permission-mode acceptEdits"`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id, runArgs := args[0], args[1:]
			if dash := cmd.ArgsLenAtDash(); dash == -1 && len(runArgs) > 0 {
				return withExit(2, fmt.Errorf("one task id at a time; run flags go after --retry --"))
			}
			if len(runArgs) > 0 && !retry {
				return withExit(2, errors.New("arguments after -- are for --retry's run"))
			}
			r, err := resolveRepo(ctx, repo)
			if err != nil {
				return withExit(2, err)
			}
			out, err := runner.Rollback(ctx, runner.RollbackOptions{Repo: r, TaskID: id, Roadmap: roadmapPath, Branch: branch, Base: base,
				WorkDir: workDir, Cache: localCache(), GitAuth: gitAuthFromEnv(r)})
			var conflict *runner.RevertConflictError
			switch {
			case errors.As(err, &conflict):
				fmt.Fprintf(cmd.ErrOrStderr(), "The revert does not apply: %s.\nNothing was pushed. Resolve it by hand, or roll back the task that changed these files after %s too.\n\n%s",
					strings.Join(conflict.Paths, ", "), id, conflict.Diff)
				return withExit(3, err)
			case errors.Is(err, runner.ErrUsage), errors.Is(err, runner.ErrInvalidPlan):
				return withExit(2, err)
			case err != nil:
				return withExit(1, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "Rolled back on %s (now %s):\n", out.Branch, short(out.Head))
			for _, t := range out.Reverted {
				fmt.Fprintf(w, "  %s %s: checkpoint %s reverted by %s\n", t.ID, t.Title, short(t.Checkpoint), short(t.Revert))
			}
			if !retry {
				fmt.Fprintln(w, "They are pending again: akira run does them again.")
				return nil
			}
			run := newRunCmd()
			flags := []string{"--branch", out.Branch}
			if repo != "" {
				flags = append(flags, "--repo", repo)
			}
			if roadmapPath != "" {
				flags = append(flags, "--roadmap", roadmapPath)
			}
			if base != "" {
				flags = append(flags, "--base", base)
			}
			if workDir != "" {
				flags = append(flags, "--work-dir", workDir)
			}
			run.SetArgs(append(flags, runArgs...))
			run.SetOut(cmd.OutOrStdout())
			run.SetErr(cmd.ErrOrStderr())
			run.SilenceUsage, run.SilenceErrors = true, true
			return run.ExecuteContext(ctx)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&retry, "retry", false, "run the rolled-back tasks again right after")
	fl.StringVar(&repo, "repo", "", "local repository path or clone URL (default: the git repository of the current directory)")
	fl.StringVar(&roadmapPath, "roadmap", "", "the plan's path (default: roadmap of .github/akira.yml, else ROADMAP.md)")
	fl.StringVar(&branch, "branch", "", "the branch (default: the one akira run uses for the plan)")
	fl.StringVar(&base, "base", "", "the base branch (default: the remote's default branch)")
	fl.StringVar(&workDir, "work-dir", "", "directory for the temporary clone (default: $TMPDIR)")
	return cmd
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
