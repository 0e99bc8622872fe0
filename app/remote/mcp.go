package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/akira-bot/akira/app/admin"
)

// The Model Context Protocol server of `akira mcp`: an editor's assistant hands off the plan it
// wrote and reports progress. Each tool is one call of the REST API with the client's token, so
// the server's rules (scopes, repositories, plan checks, idempotency) are the API's.

// StartRunInput is start_run's input.
type StartRunInput struct {
	Repository     string  `json:"repository" jsonschema:"the GitHub repository, owner/name"`
	Base           string  `json:"base,omitempty" jsonschema:"the branch the run starts from and its pull request goes into (the default branch when empty)"`
	Plan           string  `json:"plan,omitempty" jsonschema:"the plan's text: markdown task checkboxes, one task per '- [ ] ' line"`
	PlanPath       string  `json:"plan_path,omitempty" jsonschema:"instead of plan: a plan file of the repository at base"`
	Agent          string  `json:"agent,omitempty" jsonschema:"one of the operator's agent profiles"`
	Budget         float64 `json:"budget,omitempty" jsonschema:"the run's cost limit in US dollars"`
	Reference      string  `json:"reference,omitempty" jsonschema:"your conversation or ticket id, shown on the pull request"`
	IdempotencyKey string  `json:"idempotency_key,omitempty" jsonschema:"a key of your choice: repeating start_run with it and the same inputs within 24 hours returns the same run; the same key with other inputs is refused"`
}

// RunInput names a run.
type RunInput struct {
	RunID string `json:"run_id" jsonschema:"the run's id, as start_run or list_runs gave it"`
}

// PauseInput is pause_run's and resume_run's input.
type PauseInput struct {
	RunID string `json:"run_id" jsonschema:"the run's id, as start_run or list_runs gave it"`
	Now   bool   `json:"now,omitempty" jsonschema:"pause_run only: stop the current task at once and discard its attempt, instead of letting it finish"`
}

// AnswerInput is answer_escalation's input.
type AnswerInput struct {
	RunID      string `json:"run_id" jsonschema:"the run's id"`
	Escalation int    `json:"escalation,omitempty" jsonschema:"which escalation waiting on the run: 1 is the oldest (the default)"`
	Action     string `json:"action" jsonschema:"approve, retry, skip or abort"`
	Guidance   string `json:"guidance,omitempty" jsonschema:"with retry: what the agent should do differently"`
}

// ListInput is list_runs's input.
type ListInput struct {
	Repository string   `json:"repository,omitempty" jsonschema:"only the runs of this repository, owner/name"`
	States     []string `json:"states,omitempty" jsonschema:"only runs in these states: queued, running, parked, stopped, succeeded, failed, aborted"`
	Limit      int      `json:"limit,omitempty" jsonschema:"at most this many runs (20 when empty)"`
}

// ControlOutput is what a control tool did.
type ControlOutput struct {
	RunID  string `json:"run_id"`
	Result string `json:"result"`
}

// ListOutput is list_runs's answer.
type ListOutput struct {
	Runs []admin.RunSummary `json:"runs"`
}

// errNoPause is pause_run's and resume_run's answer while the server has no pause.
var errNoPause = errors.New("not supported by this server yet: this Akira cannot pause or resume runs; stop_run stops one (a person continues it with /akira run)")

// MCPServer is the MCP server of the client's Akira.
func (c *Client) MCPServer(version string) *mcp.Server {
	c = c.Via("MCP")
	s := mcp.NewServer(&mcp.Implementation{Name: "akira", Title: "Akira", Version: version}, &mcp.ServerOptions{
		Instructions: "Akira runs a plan's tasks with a coding agent on the team's server, one verified checkpoint commit per task, " +
			"on a branch with a pull request. Hand off a plan with start_run (markdown task checkboxes), then follow it with run_status; " +
			"a parked run waits for answer_escalation.",
	})
	mcp.AddTool(s, &mcp.Tool{Name: "start_run", Description: "Start a run of a plan on the team's Akira: it opens a pull request and works through the tasks unattended. Answers the run's id, its dashboard URL, its branch and an estimate."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in StartRunInput) (*mcp.CallToolResult, any, error) {
			res, err := c.Start(ctx, admin.StartBody{Repository: in.Repository, Base: in.Base, Plan: in.Plan, PlanPath: in.PlanPath,
				Agent: in.Agent, Budget: in.Budget, Reference: in.Reference}, in.IdempotencyKey)
			if err != nil {
				return nil, nil, err
			}
			return nil, res, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "run_status", Description: "Read a run: its status (queued, running, parked, waiting_ci, succeeded, failed, aborted, stopped), its tasks with their checkpoints, the escalations waiting for a decision and the pull request."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, any, error) {
			if err := needRun(in.RunID); err != nil {
				return nil, nil, err
			}
			run, err := c.Run(ctx, in.RunID)
			if err != nil {
				return nil, nil, err
			}
			return nil, run, nil
		})
	descriptions := map[string]string{
		"pause":  "Pause a run (as /akira pause): it finishes its current task (now: stops it at once, discarding the attempt) and then holds no worker until resumed.",
		"resume": "Resume a paused run (as /akira resume): it continues at its next task on any worker.",
	}
	for _, verb := range []string{"pause", "resume"} {
		mcp.AddTool(s, &mcp.Tool{Name: verb + "_run", Description: descriptions[verb]},
			func(ctx context.Context, _ *mcp.CallToolRequest, in PauseInput) (*mcp.CallToolResult, any, error) {
				if err := needRun(in.RunID); err != nil {
					return nil, nil, err
				}
				path := "/runs/" + url.PathEscape(in.RunID) + "/" + verb
				if verb == "pause" && in.Now {
					path += "?now=1"
				}
				var out admin.ControlResult
				err := c.do(ctx, http.MethodPost, path, nil, nil, &out)
				if ae, ok := errors.AsType[*APIError](err); ok && (ae.Status == http.StatusMethodNotAllowed ||
					(ae.Status == http.StatusNotFound && !strings.HasPrefix(ae.Message, "no run"))) {
					return nil, nil, errNoPause
				}
				if err != nil {
					return nil, nil, err
				}
				return nil, ControlOutput{RunID: in.RunID, Result: out.Result}, nil
			})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "stop_run", Description: "Stop a run at its next safe point (as /akira stop): pushed checkpoints stay; /akira run continues it later."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, any, error) {
			if err := needRun(in.RunID); err != nil {
				return nil, nil, err
			}
			res, err := c.Stop(ctx, in.RunID)
			if err != nil {
				return nil, nil, err
			}
			return nil, ControlOutput{RunID: in.RunID, Result: res}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "answer_escalation", Description: "Answer an escalation of a parked run (as a reply to its comment): approve the task as it is, retry it with guidance, skip it, or abort the run. Needs a control token."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in AnswerInput) (*mcp.CallToolResult, any, error) {
			if err := needRun(in.RunID); err != nil {
				return nil, nil, err
			}
			n := in.Escalation
			if n == 0 {
				n = 1
			}
			res, err := c.Answer(ctx, in.RunID, n, in.Action, in.Guidance)
			if err != nil {
				return nil, nil, err
			}
			return nil, ControlOutput{RunID: in.RunID, Result: res}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "list_runs", Description: "List runs, newest first, optionally of one repository and in some states."},
		func(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, any, error) {
			limit := in.Limit
			if limit <= 0 {
				limit = 20
			}
			runs, err := c.Runs(ctx, in.Repository, in.States, limit)
			if err != nil {
				return nil, nil, err
			}
			if runs == nil {
				runs = []admin.RunSummary{}
			}
			return nil, ListOutput{Runs: runs}, nil
		})
	return s
}

func needRun(id string) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("run_id is required")
	}
	return nil
}
