package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
)

func init() { subcommands = append(subcommands, newCacheCmd) }

func newCacheCmd() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "cache ls | prune [--max SIZE | --all]",
		Short: "Show and trim the dependency caches and setup snapshots kept across runs",
		Long: `The dependency caches (Go modules and build cache, npm, pip, cargo) are kept per repository and
keyed by the content of its lock files; beside them, the setup snapshots (what a repository's setup
added to the work tree, restored instead of running setup again) are keyed by setup's inputs. ls
lists them, most recently used first; prune removes the least recently used of each repository until
it is under --max (default: the configured cap), or all of them with --all; a snapshot goes with the
dependency cache it was made with. --dir names the caches of a worker (AKIRA_CACHE_DIR with "-deps").`,
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "the caches' directory (default: AKIRA_DEPS_CACHE_DIR, else akira/deps in the user's cache directory)")
	caches := func() (*env.Caches, error) {
		if dir != "" {
			c := depCachesBeside(dir)
			c.Root = dir
			return c, nil
		}
		if c := localDepCaches(); c != nil {
			return c, nil
		}
		return nil, errors.New("cache: the dependency caches are off (AKIRA_DEPS_CACHE_DIR=off)")
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "ls",
		Short: "List the dependency caches, most recently used first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := caches()
			if err != nil {
				return withExit(2, err)
			}
			entries, err := c.List()
			if err != nil {
				return withExit(1, err)
			}
			out := cmd.OutOrStdout()
			if len(entries) == 0 {
				fmt.Fprintf(out, "no dependency caches in %s\n", c.Root)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "REPOSITORY\tKEY\tKIND\tSIZE\tLAST USED")
			var total int64
			for _, e := range entries {
				total += e.Size
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Scope, e.Key, e.Kind, humanSize(e.Size), e.LastUsed.UTC().Format(time.RFC3339))
			}
			_ = tw.Flush()
			fmt.Fprintf(out, "%d caches, %s in %s\n", len(entries), humanSize(total), c.Root)
			return nil
		},
	})
	var maxSize string
	var all bool
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Remove the least recently used dependency caches of each repository over the cap",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := caches()
			if err != nil {
				return withExit(2, err)
			}
			var limit int64
			switch {
			case all && maxSize != "":
				return withExit(2, errors.New("cache prune: --all and --max exclude each other"))
			case all:
				limit = -1
			case maxSize != "":
				if limit, err = config.ParseSize(maxSize); err != nil || limit <= 0 {
					return withExit(2, fmt.Errorf("cache prune: --max %q: want a size like 5GiB", maxSize))
				}
			}
			removed, err := c.Prune(limit, "")
			var freed int64
			for _, e := range removed {
				freed += e.Size
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s/%s (%s)\n", e.Scope, e.Key, humanSize(e.Size))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d caches removed, %s freed\n", len(removed), humanSize(freed))
			if err != nil {
				return withExit(1, err)
			}
			return nil
		},
	}
	prune.Flags().StringVar(&maxSize, "max", "", "size each repository's caches are trimmed to, e.g. 5GiB (default: the configured cap)")
	prune.Flags().BoolVar(&all, "all", false, "remove every dependency cache")
	cmd.AddCommand(prune)
	return cmd
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
