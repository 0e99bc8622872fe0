// Command akira turns a roadmap into reviewed commits, locally (akira run) or as a GitHub App (akira serve).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

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
	root.SetFlagErrorFunc(flagError)
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
	// The first SIGINT or SIGTERM ends the command's context; a second one ends the process at once
	// (the signal's default action), whatever the command is doing.
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(execute(ctx, os.Args[1:]))
}

// How a command stops when its context ends (SIGINT or SIGTERM): at its next look at the context,
// killing what it started and removing what it made (a run's workspace, an agent's process); one
// busy in work that never looks (reading a roadmap of 100,000 tasks) is not waited for longer than
// stopGrace. A command annotated stopsItself has its own, configured, grace (serve's
// AKIRA_SHUTDOWN_TIMEOUT for its running jobs) and is waited for.
const (
	stopAnnotation = "akira/stop"
	stopsItself    = "itself"
	stopGrace      = 5 * time.Second
)

// errStopped is what a command ended by a signal without having stopped by itself answers.
func errStopped(ctx context.Context, what string) error {
	return withExit(exitInterrupted, fmt.Errorf("%s: interrupted (%v)", what, context.Cause(ctx)))
}

// execute runs the CLI and returns the process exit code.
func execute(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	grace := stopGrace
	name := root.Name()
	if cmd, _, err := root.Find(args); err == nil {
		name = cmd.CommandPath()
		if cmd.Annotations[stopAnnotation] == stopsItself {
			grace = -1
		}
	}
	err := untilStopped(ctx, grace, name, func() error { return root.ExecuteContext(ctx) })
	if err == nil {
		return 0
	}
	code := exitCode(err)
	var ee *exitError
	if errors.As(err, &ee) && ee.err == nil {
		return code
	}
	fmt.Fprintln(os.Stderr, "akira:", err)
	return code
}

// exitCode is the process exit code of a command's error: the code it carries, 2 for a command
// cobra does not know (a usage error, with cobra's "Did you mean this?"), else 1.
func exitCode(err error) int {
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case strings.HasPrefix(err.Error(), "unknown command "):
		return 2
	}
	return 1
}

// untilStopped runs the command and returns what it returns, or, once ctx has ended, what it
// returns within grace (for ever when grace is negative), or else errStopped: the command is left
// to the process's exit.
func untilStopped(ctx context.Context, grace time.Duration, name string, command func() error) error {
	done := make(chan error, 1)
	go func() { done <- command() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if grace < 0 {
		return <-done
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return errStopped(ctx, name)
	}
}

// atOnce runs work that never looks at ctx (reading and parsing a plan) and returns as soon as ctx
// ends, with errStopped; the work is left to the process's exit. Only for work that writes nothing
// but its output.
func atOnce(ctx context.Context, name string, work func() error) error {
	done := make(chan error, 1)
	go func() { done <- work() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return errStopped(ctx, name)
	}
}
