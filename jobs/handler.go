package jobs

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/akira-bot/akira/jobs/intake"

	"github.com/akira-bot/akira/jobs/runs"

	"github.com/akira-bot/akira/jobs/recovery"

	"github.com/hibiken/asynq"

	"github.com/akira-bot/akira/jobs/fair"
	"github.com/akira-bot/akira/jobs/flow"
	"github.com/akira-bot/akira/jobs/lifecycle"
	"github.com/akira-bot/akira/jobs/publish"
	"github.com/akira-bot/akira/jobs/queue"
)

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

// Handler is a worker's wiring: the dependencies, and the flows' types that serve the task types. The
// flows are packages stacked one way (jobs/intake on jobs/runs on jobs/recovery on jobs/publish), each
// handed the ones below it here, so the compiler keeps a lower flow from calling a higher one.
type Handler struct {
	d   flow.Deps
	log *slog.Logger

	intake    *intake.Intake     // webhook deliveries: permission, commands, triggers, replies
	api       *intake.API        // what arrives through the REST API: audit lines, hand-offs
	planner   *runs.Planner      // plans the agent proposes for issues in prose
	recovery  *recovery.Recovery // deliveries GitHub or Redis lost: the sweep and the recovery after a loss
	runs      *runs.Runs         // the run job: lock, engine, stop, pause, budget, review, rebuild
	resumer   *runs.Resumer      // decisions on parked runs
	rollbacks *runs.Rollbacks    // /akira rollback
	ci        *runs.CIWatch      // the pull request's own CI after the last checkpoint
	reaper    *runs.Reaper       // runs whose worker died
	pub       *publish.Effects   // effects performed: summary, check runs, notifications, the outbox relay
}

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
	// Below first: publishing reaches no other flow, recovery reaches publishing, the run flow both,
	// and the intake all three.
	h.pub, h.recovery = publish.New(&h.d, log), recovery.New(&h.d, log)
	rf := runs.New(&h.d, log, h.pub, h.recovery)
	h.runs, h.resumer, h.rollbacks, h.ci, h.reaper, h.planner = rf.Runs, rf.Resumer, rf.Rollbacks, rf.CI, rf.Reaper, rf.Planner
	h.intake, h.api = intake.New(&h.d, log, h.pub, rf)
	return h, nil
}

// taskType is one asynq task type: its name (the constant beside its payload in jobs/queue) and its
// handler on a worker's flows.
type taskType struct {
	Name string
	// Handle picks the handler of the type from a worker's flows.
	Handle func(h *Handler) asynq.HandlerFunc
}

// taskTypes are every task type a worker serves. A new task type is its payload's file in
// jobs/queue, its handler on its flow's type, and a line here.
var taskTypes = []taskType{
	{queue.TypeIntake, func(h *Handler) asynq.HandlerFunc { return h.intake.HandleIntake }},
	{queue.TypeAuditLine, func(h *Handler) asynq.HandlerFunc { return h.api.HandleAuditLine }},
	{queue.TypeHandoff, func(h *Handler) asynq.HandlerFunc { return h.api.HandleHandoff }},
	{queue.TypeRun, func(h *Handler) asynq.HandlerFunc { return h.runs.HandleRun }},
	{queue.TypeResume, func(h *Handler) asynq.HandlerFunc { return h.resumer.HandleResume }},
	{queue.TypeRollback, func(h *Handler) asynq.HandlerFunc { return h.rollbacks.HandleRollback }},
	{queue.TypeCI, func(h *Handler) asynq.HandlerFunc { return h.ci.HandleCI }},
	{queue.TypePlan, func(h *Handler) asynq.HandlerFunc { return h.planner.HandlePlan }},
	{queue.TypeSweep, func(h *Handler) asynq.HandlerFunc { return h.recovery.HandleSweep }},
	{queue.TypeRecover, func(h *Handler) asynq.HandlerFunc { return h.recovery.HandleRecover }},
	{queue.TypeNotify, func(h *Handler) asynq.HandlerFunc { return h.pub.HandleNotify }},
	{queue.TypePublish, func(h *Handler) asynq.HandlerFunc { return h.pub.HandlePublish }},
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
