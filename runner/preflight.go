package runner

import (
	"context"
	"fmt"

	"github.com/akira-bot/akira/runner/agent"
)

// checkAgent asks the agent, before its first attempt, for the problems no retry fixes (a CLI not
// installed, a script not committed or not executable, a path the sandbox hides): they end the run
// as a usage error naming the fix, rather than spending every attempt of a task and parking it.
// The App fails such a run at once; akira run exits 2.
func (e *engine) checkAgent(ctx context.Context) error {
	c, ok := e.o.Agent.(agent.Checker)
	if !ok {
		return nil
	}
	box := e.o.Sandbox.Policy(e.o.AgentNetwork, e.ws.Dir, e.ws.GitDir(), "")
	if err := c.Check(e.ws.Dir, box); err != nil {
		// The App shows it where people look, a check run, not only in the failed run's summary.
		if rerr := e.emit(ctx, Event{Type: EventAgentUnusable, Message: err.Error(), Commit: e.ws.Head()}); rerr != nil {
			return rerr
		}
		return fmt.Errorf("runner: %w: %w", ErrUsage, err)
	}
	return nil
}
