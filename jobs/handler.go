package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/lifecycle"
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

// errNothingToDo ends a job that finds its work already done (a duplicate, a finished run).
var errNothingToDo = errors.New("jobs: nothing to do")

// IsFailure is the asynq.Config.IsFailure of a worker: waiting for a busy branch, or for a slot of
// the fair gate, is not a failure.
func IsFailure(err error) bool {
	_, waits := errors.AsType[*fair.SlotWaitError](err)
	return !errors.Is(err, ErrBusy) && !waits
}

// RetryDelay is the asynq.Config.RetryDelayFunc of a worker: a busy branch is tried again soon, a
// failure after an exponential backoff (10s, 20s, 40s, ... at most 10 minutes).
func RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, ErrBusy) {
		return 5 * time.Second
	}
	if w, ok := errors.AsType[*fair.SlotWaitError](err); ok {
		return w.Delay
	}
	return time.Duration(math.Min(float64(10*time.Second)*math.Pow(2, float64(n)), float64(10*time.Minute)))
}

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
	Deliveries Deliveries
	// Repositories, when set, finds a repository's installation for runs handed off through the API.
	Repositories RepoInstallations
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

// Handler is a worker's wiring: the dependencies, and one small type per flow that serves the flow's
// task types. A flow reaches another only through its field here (h.pub.publish, h.runs.escalate),
// so what a flow needs of the others shows at the call.
type Handler struct {
	d   Deps
	log *slog.Logger

	intake    *Intake    // webhook deliveries: permission, commands, triggers, replies (intake*.go)
	api       *API       // what arrives through the REST API: audit lines, hand-offs
	planner   *Planner   // plans the agent proposes for issues in prose
	recovery  *Recovery  // deliveries GitHub or Redis lost: the sweep and the recovery after a loss
	runs      *Runs      // the run job: lock, engine, stop, pause, budget, review, rebuild (run*.go)
	resumer   *Resumer   // decisions on parked runs
	rollbacks *Rollbacks // /akira rollback
	ci        *CIWatch   // the pull request's own CI after the last checkpoint
	reaper    *Reaper    // runs whose worker died
	pub       *Publish   // effects performed: summary, check runs, notifications, the outbox relay
}

// The flows' types. Each embeds the Handler for the dependencies and the other flows; a flow whose
// use of Redis is a few of the store's concerns holds those (h.records, h.replies), not the whole store,
// so what it keeps in Redis shows in its type. Intake and Runs use most of the store.
type (
	Intake struct{ *Handler }
	API    struct {
		*Handler
		handoffs *store.Handoffs
	}
	Planner  struct{ *Handler }
	Recovery struct{ *Handler }
	Runs     struct{ *Handler }
	Resumer  struct {
		*Handler
		records *store.Records
		replies *store.Dedupe
	}
	Rollbacks struct {
		*Handler
		records *store.Records
		replies *store.Dedupe
	}
	CIWatch struct {
		*Handler
		records *store.Records
	}
	Reaper struct {
		*Handler
		records *store.Records
	}
	Publish struct {
		*Handler
		records *store.Records
		slots   *store.Slots
		replies *store.Dedupe
	}
)

// NewHandler checks the dependencies.
func NewHandler(d Deps) (*Handler, error) {
	if d.Store == nil || d.Locker == nil || d.Enqueuer == nil || d.GitHub == nil {
		return nil, errors.New("jobs: handler needs a store, a locker, an enqueuer and GitHub")
	}
	if d.NewAgent == nil {
		d.NewAgent = ExecAgent(d.WorkDir)
	}
	if d.NotifyClient == nil {
		d.NotifyClient = &http.Client{Timeout: 15 * time.Second}
	}
	log := d.Logger
	if log == nil {
		log = slog.Default()
	}
	if d.Store.OnRefused == nil {
		d.Store.OnRefused = func(te *lifecycle.TransitionError) {
			log.Error("lifecycle: event refused", "err", te, "run", te.Run, "from", te.From, "event", te.Event)
			d.Metrics.RefusedTransition(te)
		}
	}
	h := &Handler{d: d, log: log}
	records, replies := d.Store.Records, d.Store.Dedupe
	h.intake, h.api, h.planner, h.recovery = &Intake{h}, &API{h, d.Store.Handoffs}, &Planner{h}, &Recovery{h}
	h.runs, h.resumer, h.rollbacks = &Runs{h}, &Resumer{h, records, replies}, &Rollbacks{h, records, replies}
	h.ci, h.reaper = &CIWatch{h, records}, &Reaper{h, records}
	h.pub = &Publish{h, records, d.Store.Slots, replies}
	return h, nil
}

// taskType is one asynq task type: its name and its handler. Each lives in a file of its own with
// its payload (Validate, JobID), its constructor and its enqueue method; taskTypes lists them.
type taskType struct {
	Name string
	// Handle picks the handler of the type from a worker's flows.
	Handle func(h *Handler) asynq.HandlerFunc
}

// taskTypes are every task type a worker serves. A new task type is a file (its constant, payload
// and handler, and a taskType value) and a line here.
var taskTypes = []taskType{
	intakeTaskType, runTaskType, resumeTaskType, planTaskType, rollbackTaskType, sweepTaskType, recoverTaskType, notifyTaskType,
	auditLineTaskType, publishTaskType, ciTaskType, handoffTaskType,
}

// NewServeMux routes the task types to h.
func NewServeMux(h *Handler) *asynq.ServeMux {
	mux := asynq.NewServeMux()
	for _, tt := range taskTypes {
		mux.HandleFunc(tt.Name, tt.Handle(h))
	}
	return mux
}

// installation returns the client of an installation; failing to get one is transient.
func installation(ctx context.Context, in ports.Installations, id int64) (ports.GitHub, error) {
	gh, err := in.Installation(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("jobs: installation %d: %w", id, err)
	}
	return gh, nil
}

// RunReaper runs the worker's reaper until ctx ends (see Reaper.RunReaper): the one loop a worker
// runs beside its task handlers.
func (h *Handler) RunReaper(ctx context.Context, interval time.Duration) {
	h.reaper.RunReaper(ctx, interval)
}
