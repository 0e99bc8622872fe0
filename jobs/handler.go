package jobs

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/akira-bot/akira/jobs/recovery"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/queue"
	"github.com/akira-bot/akira/jobs/store"
)

// errNothingToDo ends a job that finds its work already done (a duplicate, a finished run).
var errNothingToDo = errors.New("jobs: nothing to do")

// IsFailure is the asynq.Config.IsFailure of a worker: waiting for a busy branch, or for a slot of
// the fair gate, is not a failure.
func IsFailure(err error) bool {
	_, waits := errors.AsType[*fair.SlotWaitError](err)
	return !errors.Is(err, flow.ErrBusy) && !waits
}

// RetryDelay is the asynq.Config.RetryDelayFunc of a worker: a busy branch is tried again soon, a
// failure after an exponential backoff (10s, 20s, 40s, ... at most 10 minutes).
func RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, flow.ErrBusy) {
		return 5 * time.Second
	}
	if w, ok := errors.AsType[*fair.SlotWaitError](err); ok {
		return w.Delay
	}
	return time.Duration(math.Min(float64(10*time.Second)*math.Pow(2, float64(n)), float64(10*time.Minute)))
}

// Handler is a worker's wiring: the dependencies, and one small type per flow that serves the flow's
// task types. A flow reaches another only through its field here (h.pub.publish, h.runs.escalate),
// so what a flow needs of the others shows at the call.
type Handler struct {
	d   flow.Deps
	log *slog.Logger

	intake    *Intake            // webhook deliveries: permission, commands, triggers, replies (intake*.go)
	api       *API               // what arrives through the REST API: audit lines, hand-offs
	planner   *Planner           // plans the agent proposes for issues in prose
	recovery  *recovery.Recovery // deliveries GitHub or Redis lost: the sweep and the recovery after a loss
	runs      *Runs              // the run job: lock, engine, stop, pause, budget, review, rebuild (run*.go)
	resumer   *Resumer           // decisions on parked runs
	rollbacks *Rollbacks         // /akira rollback
	ci        *CIWatch           // the pull request's own CI after the last checkpoint
	reaper    *Reaper            // runs whose worker died
	pub       *publish.Effects   // effects performed: summary, check runs, notifications, the outbox relay
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
	Planner struct{ *Handler }
	Runs    struct{ *Handler }
	Resumer struct {
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
)

// NewHandler checks the dependencies.
func NewHandler(d flow.Deps) (*Handler, error) {
	if d.Store == nil || d.Locker == nil || d.Enqueuer == nil || d.GitHub == nil {
		return nil, errors.New("jobs: handler needs a store, a locker, an enqueuer and GitHub")
	}
	if d.NewAgent == nil {
		d.NewAgent = flow.ExecAgent(d.WorkDir)
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
	h.intake, h.api, h.planner, h.recovery = &Intake{h}, &API{h, d.Store.Handoffs}, &Planner{h}, recovery.New(&h.d, log)
	h.runs, h.resumer, h.rollbacks = &Runs{h}, &Resumer{h, records, replies}, &Rollbacks{h, records, replies}
	h.ci, h.reaper = &CIWatch{h, records}, &Reaper{h, records}
	h.pub = publish.New(&h.d, log)
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

// RunReaper runs the worker's reaper until ctx ends (see Reaper.RunReaper): the one loop a worker
// runs beside its task handlers.
func (h *Handler) RunReaper(ctx context.Context, interval time.Duration) {
	h.reaper.RunReaper(ctx, interval)
}

// notifyTaskType is served by Publish.HandleNotify (see taskTypes).
var notifyTaskType = taskType{Name: queue.TypeNotify, Handle: func(h *Handler) asynq.HandlerFunc { return h.pub.HandleNotify }}

// publishTaskType is served by Publish.HandlePublish (see taskTypes).
var publishTaskType = taskType{Name: queue.TypePublish, Handle: func(h *Handler) asynq.HandlerFunc { return h.pub.HandlePublish }}

// recoverTaskType is served by Recovery.HandleRecover (see taskTypes).
var recoverTaskType = taskType{Name: queue.TypeRecover, Handle: func(h *Handler) asynq.HandlerFunc { return h.recovery.HandleRecover }}

// sweepTaskType is served by Recovery.HandleSweep (see taskTypes).
var sweepTaskType = taskType{Name: queue.TypeSweep, Handle: func(h *Handler) asynq.HandlerFunc { return h.recovery.HandleSweep }}

// runTaskType is served by Runs.HandleRun (see taskTypes).
var runTaskType = taskType{Name: queue.TypeRun, Handle: func(h *Handler) asynq.HandlerFunc { return h.runs.HandleRun }}

// ciTaskType is served by CIWatch.HandleCI (see taskTypes).
var ciTaskType = taskType{Name: queue.TypeCI, Handle: func(h *Handler) asynq.HandlerFunc { return h.ci.HandleCI }}

// resumeTaskType is served by Resumer.HandleResume (see taskTypes).
var resumeTaskType = taskType{Name: queue.TypeResume, Handle: func(h *Handler) asynq.HandlerFunc { return h.resumer.HandleResume }}

// rollbackTaskType is served by Rollbacks.HandleRollback (see taskTypes).
var rollbackTaskType = taskType{Name: queue.TypeRollback, Handle: func(h *Handler) asynq.HandlerFunc { return h.rollbacks.HandleRollback }}

// planTaskType is served by Planner.HandlePlan (see taskTypes).
var planTaskType = taskType{Name: queue.TypePlan, Handle: func(h *Handler) asynq.HandlerFunc { return h.planner.HandlePlan }}

// intakeTaskType is served by Intake.HandleIntake (see taskTypes).
var intakeTaskType = taskType{Name: queue.TypeIntake, Handle: func(h *Handler) asynq.HandlerFunc { return h.intake.HandleIntake }}

// auditLineTaskType is served by API.HandleAuditLine (see taskTypes).
var auditLineTaskType = taskType{Name: queue.TypeAuditLine, Handle: func(h *Handler) asynq.HandlerFunc { return h.api.HandleAuditLine }}

// handoffTaskType is served by API.HandleHandoff (see taskTypes).
var handoffTaskType = taskType{Name: queue.TypeHandoff, Handle: func(h *Handler) asynq.HandlerFunc { return h.api.HandleHandoff }}
