// Command akira turns a roadmap into reviewed commits, locally (akira run) or as a GitHub App (akira serve).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra, so each subcommand can say
// "invalid roadmap" (2) or "escalation pending" (3) without calling os.Exit itself.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withExit wraps err so that main exits with code. A nil err still exits with code
// (used for "escalation pending", which is not an error message).
func withExit(code int, err error) error { return &exitError{code: code, err: err} }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "akira",
		Short:         "Akira turns a roadmap into reviewed commits",
		Long:          "Akira runs each task of a roadmap with a coding agent in an ephemeral clone, verifies it,\nand commits one checkpoint per verified task to a branch.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withExit(2, fmt.Errorf("%w\nsee '%s --help'", err, c.CommandPath()))
	})
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands is filled by each subcommand's file in init, so that files can be added
// independently (plan.go, run.go, serve.go, ...).
var subcommands []func() *cobra.Command

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(execute(ctx, os.Args[1:]))
}

// execute runs the CLI and returns the process exit code.
func execute(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
	}
	fmt.Fprintln(os.Stderr, "akira:", err)
	return code
}
