package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner/lessons"
)

func init() { subcommands = append(subcommands, newMemoryCmd) }

// localLessons is the memory of `akira run` for a repository: a file under AKIRA_MEMORY_DIR, else
// akira/lessons in the user's configuration directory; AKIRA_MEMORY_DIR=off turns it off.
func localLessons(repo string) lessons.Store {
	dir := os.Getenv("AKIRA_MEMORY_DIR")
	switch dir {
	case "off":
		return nil
	case "":
		base, err := os.UserConfigDir()
		if err != nil {
			return nil
		}
		dir = filepath.Join(base, "akira", "lessons")
	}
	return &lessons.FileStore{Path: lessons.FileFor(dir, repo)}
}

func newMemoryCmd() *cobra.Command {
	var repo string
	cmd := &cobra.Command{
		Use:   "memory list | show ID | forget ID | remember TEXT",
		Short: "Read and edit a repository's lessons: what earlier runs were taught",
		Long: `Memory shows and edits the lessons akira run keeps for a repository (AKIRA_MEMORY_DIR, else
akira/lessons in your configuration directory): the guidance of a retry that then succeeded, and
notes added with remember. The relevant ones go into each task's prompt. AKIRA_MEMORY_DIR=off, or
memory: off in .github/akira.yml, turns the memory off.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			r, err := resolveRepo(ctx, repo)
			if err != nil {
				return withExit(2, err)
			}
			store := localLessons(r)
			if store == nil {
				return withExit(2, errors.New("the memory is off (AKIRA_MEMORY_DIR=off)"))
			}
			out := cmd.OutOrStdout()
			switch {
			case args[0] == "list" && len(args) == 1:
				ls, err := store.List(ctx)
				if err != nil {
					return withExit(1, err)
				}
				if len(ls) == 0 {
					fmt.Fprintln(out, "No lessons yet.")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tDATE\tSOURCE\tLESSON")
				for _, l := range ls {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.ID, l.Created.Format("2006-01-02"), truncateText(l.Source, 40), truncateText(l.Text, 60))
				}
				return tw.Flush()
			case args[0] == "show" && len(args) == 2:
				ls, err := store.List(ctx)
				if err != nil {
					return withExit(1, err)
				}
				for _, l := range ls {
					if l.ID == args[1] {
						fmt.Fprintf(out, "%s · %s · %s\n\n%s\n", l.ID, l.Created.Format("2006-01-02"), l.Source, l.Text)
						return nil
					}
				}
				return withExit(1, fmt.Errorf("no lesson %s", args[1]))
			case args[0] == "forget" && len(args) == 2:
				ok, err := store.Forget(ctx, args[1])
				if err != nil {
					return withExit(1, err)
				}
				if !ok {
					return withExit(1, fmt.Errorf("no lesson %s", args[1]))
				}
				fmt.Fprintf(out, "Forgot %s.\n", args[1])
				return nil
			case args[0] == "remember" && len(args) >= 2:
				l, err := store.Add(ctx, lessons.Lesson{Text: strings.Join(args[1:], " "), Source: "note"})
				if err != nil {
					return withExit(1, err)
				}
				fmt.Fprintf(out, "Remembered as %s.\n", l.ID)
				return nil
			}
			return withExit(2, fmt.Errorf("usage: akira memory list | show ID | forget ID | remember TEXT"))
		},
	}
	cmd.Flags().StringVar(&repo, "repo", "", "local repository path or clone URL (default: the git repository of the current directory)")
	return cmd
}

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
