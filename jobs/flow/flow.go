// Package flow holds what every flow of a worker shares: its dependencies (Deps), the agents it may
// build, and the error a run job returns while another worker writes to its branch. The flows
// (jobs/publish, and the intake and run flows in jobs) take a Deps; jobs wires them.
package flow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/metrics"
	"github.com/akira-bot/akira/jobs/notify"
	"github.com/akira-bot/akira/jobs/ports"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/lessons"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/workspace"
)

// ErrBusy is returned by a run job whose branch another worker is writing to. It is not a failure:
// asynq retries the job later without using up its retries (see IsFailure), which queues it behind
// the run that holds the branch.
var ErrBusy = errors.New("jobs: another worker is writing to the branch; retrying later")

// AgentFactory builds the agent of a profile the operator defined.
type AgentFactory func(name string, p config.AgentProfile) (agent.Agent, error)

// Deps is what the handlers need. Store, Locker, Enqueuer and GitHub are required.
type Deps struct {
	Store    *store.Store
	Locker   *store.Locker
	Enqueuer *queue.Enqueuer
	GitHub   ports.Installations
	// Operator is the operator's configuration: agent profiles, attempts, verification settings.
	Operator config.Operator
	// Sandbox confines the agent and verification commands of every run. cmd/akira resolves it from
	// the operator's file; the zero value is mode none, which every run then logs a warning about.
	Sandbox sandbox.Config
	// NewAgent builds agents; nil builds exec agents only (ExecAgent).
	NewAgent AgentFactory
	// Judge, when set, checks tasks with acceptance criteria (Operator.Judge says how confident it
	// must be); Semantic, when set, ranks lessons by embeddings.
	Judge    runner.Judge
	Semantic *lessons.Semantic
	// WorkDir is where workspaces are created (os.TempDir when empty).
	WorkDir string
	// Cache, when set, keeps a mirror per repository that workspaces are made from.
	Cache *workspace.Cache
	// DepCaches, when set, keeps the dependency caches of runs, a scope per installation's repository.
	DepCaches *env.Caches
	// Author of checkpoint commits (runner.DefaultAuthor when empty).
	Author  runner.Identity
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Masker masks the secrets Akira knows in the attempt logs it keeps for LogRetention (default
	// DefaultLogRetention).
	Masker       *store.Masker
	LogRetention time.Duration
	// PublicURL is where people reach the dashboard (AKIRA_PUBLIC_URL): check runs and summaries
	// link each task's attempts and logs there. Empty: no links.
	PublicURL string
	// Sinks are the operator's notification sinks by name (Operator.Notify routes events to them);
	// NotifyClient sends to them (a client with a timeout when nil).
	Sinks        map[string]notify.Sink
	NotifyClient *http.Client
	// Deliveries, when set, lets the sweep job ask GitHub to redeliver missed webhooks.
	Deliveries ports.Deliveries
	// Repositories, when set, finds a repository's installation for runs handed off through the API.
	Repositories ports.RepoInstallations
	// Fair, when set, is the gate every run job passes first: per-installation caps and the least
	// recently served installation first (jobs/fair). Nil lets every run in.
	Fair *fair.Gate
}

// ExecAgent is the AgentFactory for exec profiles: the profile's command, with only the variables it
// names passed through.
func ExecAgent(workDir string) AgentFactory {
	return func(name string, p config.AgentProfile) (agent.Agent, error) {
		if p.Kind != "exec" {
			return nil, fmt.Errorf("jobs: agent %s: kind %s is not available in this worker", name, p.Kind)
		}
		return &agent.Exec{Command: p.Command, PassEnv: p.Env, Timeout: time.Duration(p.Timeout), TempDir: workDir}, nil
	}
}

// Installation returns the client of an installation; failing to get one is transient.
func Installation(ctx context.Context, in ports.Installations, id int64) (ports.GitHub, error) {
	gh, err := in.Installation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("jobs: installation %d: %w", id, err)
	}
	return gh, nil
}

// WriteLevels may command Akira whatever the repository's configuration says.
var WriteLevels = []string{ports.PermAdmin, ports.PermMaintain, ports.PermWrite}
