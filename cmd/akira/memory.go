package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/jobs/store"
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

// appLessons is the App's memory of a repository in Redis (REDIS_URL): the installation's given,
// else the one installation that has lessons for it.
func appLessons(ctx context.Context, repo string, installation int64) (lessons.Store, error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("--app %q: want OWNER/REPO", repo)
	}
	rdb, err := redisConnect(ctx, cmp.Or(os.Getenv("REDIS_URL"), "redis://127.0.0.1:6379/0"), os.Getenv("REDIS_PASSWORD"))
	if err != nil {
		return nil, err
	}
	st := store.NewStore(rdb, "")
	if installation == 0 {
		ids, err := st.LessonInstallations(ctx, owner, name)
		if err != nil {
			return nil, err
		}
		switch len(ids) {
		case 0:
			return nil, fmt.Errorf("no lessons for %s in Redis yet: give --installation, the App's installation id for the repository", repo)
		case 1:
			installation = ids[0]
		default:
			return nil, fmt.Errorf("%s has lessons under several installations (%v): choose one with --installation", repo, ids)
		}
	}
	return st.Lessons(installation, owner, name), nil
}

func newMemoryCmd() *cobra.Command {
	var repo, app string
	var installation int64
	cmd := &cobra.Command{
		Use:   "memory list | show ID | forget ID | remember TEXT",
		Short: "Read and edit a repository's lessons: what earlier runs were taught",
		Long: `Memory shows and edits the lessons akira run keeps for a repository (AKIRA_MEMORY_DIR, else
akira/lessons in your configuration directory): the guidance of a retry that then succeeded,
failures that were fixed, addressed review comments, and notes added with remember. The relevant
ones go into each task's prompt. AKIRA_MEMORY_DIR=off, or memory: off in .github/akira.yml, turns
the memory off.

With --app OWNER/REPO it reads and edits the GitHub App's memory of that repository in Redis
(REDIS_URL, REDIS_PASSWORD): operators write notes for every later run there.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var st lessons.Store
			if app != "" {
				if repo != "" {
					return withExit(2, errors.New("--app and --repo both name the repository: give one"))
				}
				s, err := appLessons(ctx, app, installation)
				if err != nil {
					return withExit(2, err)
				}
				st = s
			} else {
				r, err := resolveRepo(ctx, repo)
				if err != nil {
					return withExit(2, err)
				}
				if st = localLessons(r); st == nil {
					return withExit(2, errors.New("the memory is off (AKIRA_MEMORY_DIR=off)"))
				}
			}
			out := cmd.OutOrStdout()
			switch {
			case args[0] == "list" && len(args) == 1:
				ls, err := st.List(ctx)
				if err != nil {
					return withExit(1, err)
				}
				if len(ls) == 0 {
					fmt.Fprintln(out, "No lessons yet.")
					return nil
				}
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tDATE\tBY\tSOURCE\tLESSON")
				for _, l := range ls {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.ID, l.Created.Format("2006-01-02"), lessonBy(l), truncateText(l.Source, 40), truncateText(oneLineText(l.Text), 60))
				}
				return tw.Flush()
			case args[0] == "show" && len(args) == 2:
				ls, err := st.List(ctx)
				if err != nil {
					return withExit(1, err)
				}
				for _, l := range ls {
					if l.ID == args[1] {
						fmt.Fprintf(out, "%s · %s · %s · %s", l.ID, l.Created.Format("2006-01-02"), lessonBy(l), l.Source)
						if l.Author != "" {
							fmt.Fprintf(out, " · by %s", l.Author)
						}
						if l.Run != "" {
							fmt.Fprintf(out, " · run %s", l.Run)
						}
						if l.Link != "" {
							fmt.Fprintf(out, " · %s", l.Link)
						}
						fmt.Fprintf(out, "\n\n%s\n", l.Text)
						return nil
					}
				}
				return withExit(1, fmt.Errorf("no lesson %s", args[1]))
			case args[0] == "forget" && len(args) == 2:
				ok, err := st.Forget(ctx, args[1])
				if err != nil {
					return withExit(1, err)
				}
				if !ok {
					return withExit(1, fmt.Errorf("no lesson %s", args[1]))
				}
				fmt.Fprintf(out, "Forgot %s.\n", args[1])
				return nil
			case args[0] == "remember" && len(args) >= 2:
				source := "note"
				if app != "" {
					source = "operator note"
				}
				l, err := st.Add(ctx, lessons.Lesson{Text: strings.Join(args[1:], " "), Origin: lessons.OriginPerson, Source: source, Author: os.Getenv("USER")})
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
	cmd.Flags().StringVar(&app, "app", "", "OWNER/REPO: the GitHub App's memory of that repository, in Redis (REDIS_URL)")
	cmd.Flags().Int64Var(&installation, "installation", 0, "with --app: the installation id (needed only before the repository has any lesson, or when several installations do)")
	return cmd
}

// lessonBy says who a lesson comes from, which is how prompts show it: a person's is guidance, one
// Akira recorded is quoted as data, and an automatic lesson of an earlier version (it quotes command
// output) is not shown at all.
func lessonBy(l lessons.Lesson) string {
	switch {
	case l.Taught():
		return "person"
	case l.Recorded():
		return "akira (data)"
	}
	return "old automatic (hidden)"
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

func truncateText(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
