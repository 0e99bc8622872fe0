package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner/env"
)

func init() { subcommands = append(subcommands, newInitCmd) }

func newInitCmd() *cobra.Command {
	var dir string
	var force bool
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a starting .github/akira.yml: setup and verify detected from the repository's files",
		Long: `Init looks at the files at the root of the repository (go.mod, package.json and its lock file,
pyproject.toml or requirements.txt, Cargo.toml, a Makefile) and writes .github/akira.yml with the
install command as setup and the test command as verify, each with the file it was chosen from.
It refuses to replace an existing file unless --force is given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			root := dir
			if root == "" {
				r, err := resolveRepo(cmd.Context(), "")
				if err != nil {
					return withExit(2, err)
				}
				root = r
			}
			path := filepath.Join(root, ".github", "akira.yml")
			for _, p := range []string{path, filepath.Join(root, ".github", "akira.yaml")} {
				if _, err := os.Lstat(p); err == nil && !force {
					return withExit(2, fmt.Errorf("init: %s exists already; use --force to replace it", p))
				} else if err != nil && !errors.Is(err, os.ErrNotExist) {
					return withExit(1, fmt.Errorf("init: %w", err))
				}
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return withExit(1, fmt.Errorf("init: %w", err))
			}
			text := env.StartingConfig(root)
			// A symlink at the path is replaced, never written through.
			_ = os.Remove(path)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				return withExit(1, fmt.Errorf("init: %w", err))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s:\n\n%s", path, text)
			// akira run reads the file from the repository's commits, never from the disk.
			fmt.Fprintf(cmd.ErrOrStderr(), "akira: commit it for akira run to use it: git add .github/akira.yml && git commit -m 'Akira configuration'\n")
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the repository's directory (default: the git repository of the current directory)")
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing .github/akira.yml")
	return cmd
}
