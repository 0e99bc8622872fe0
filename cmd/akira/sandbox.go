package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/sandbox"
)

// sandboxChoice is how a command resolves the sandbox mode.
type sandboxChoice struct {
	// flag is --sandbox (akira run), "" when not given.
	flag string
	// explicitNone makes an unavailable sandbox an error unless the operator chose none in so many
	// words (akira serve): a worker must never fall back to no sandbox silently.
	explicitNone bool
	// available reports why bubblewrap cannot run, nil when it can (sandbox.Available).
	available func() error
}

// resolveSandbox turns the operator's file and the flag into the sandbox every run uses, and a
// warning to show when the choice is to run without one.
func resolveSandbox(op config.Operator, c sandboxChoice) (sandbox.Config, string, error) {
	choice := c.flag
	if choice == "" {
		choice = op.Sandbox.Mode
	}
	noneWarning := "sandbox: none: the agent and the verification commands run as this user, with its files, secrets and network in reach"
	switch choice {
	case "":
		err := c.available()
		if err == nil {
			return op.SandboxConfig(sandbox.Bubblewrap), "", nil
		}
		if c.explicitNone {
			return sandbox.Config{}, "", fmt.Errorf("%w\n(akira serve never runs agents without a sandbox unless the operator's file says `sandbox: none`)", err)
		}
		return op.SandboxConfig(sandbox.None), noneWarning + " (" + err.Error() + ")", nil
	case string(sandbox.Bubblewrap):
		if err := c.available(); err != nil {
			return sandbox.Config{}, "", err
		}
		return op.SandboxConfig(sandbox.Bubblewrap), "", nil
	case string(sandbox.None):
		return op.SandboxConfig(sandbox.None), noneWarning, nil
	}
	return sandbox.Config{}, "", fmt.Errorf("sandbox: %q is not a sandbox mode (want bubblewrap or none)", choice)
}

// checkOutOfSandbox refuses a file of secrets (the App's private key, an --env-file with the model
// keys), named by setting, that a sandboxed command could read: one under the system directories the
// sandbox shows, the operator's read-only paths, or the workspaces.
func checkOutOfSandbox(setting, path string, cfg sandbox.Config, workDir string) error {
	if path == "" || cfg.Mode != sandbox.Bubblewrap {
		return nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s: %w", setting, err)
	}
	if cfg.Shows(abs, workDir) {
		return errors.New(setting + ": " + abs + " is under a directory the sandbox shows to agents (the system's, sandbox.read_only or AKIRA_WORKDIR): move it elsewhere (e.g. /run/secrets)")
	}
	return nil
}
