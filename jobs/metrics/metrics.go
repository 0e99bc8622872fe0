// Package metrics is what Akira counts for Prometheus: jobs and their results, tasks, attempts,
// escalations, model usage, reaped runs, redeliveries, refused transitions and the queue's size.
package metrics

import (
	"errors"
	"log/slog"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// Metrics are the Prometheus metrics of the workers. A nil *Metrics records nothing, so tests and the
// CLI need not build one.
type Metrics struct {
	jobs         *prometheus.CounterVec
	taskDuration *prometheus.HistogramVec
	attempts     *prometheus.HistogramVec
	escalations  prometheus.Counter
	tokens       *prometheus.CounterVec
	cost         prometheus.Counter
	reapedRuns   prometheus.Counter
	redelivered  *prometheus.CounterVec
	refused      *prometheus.CounterVec
}

// Job results, the values of the result label of akira_jobs_total.
const (
	ResultSucceeded = "succeeded" // the run finished (all tasks done or skipped)
	ResultParked    = "parked"    // the run waits for a decision
	ResultFailed    = "failed"    // the run failed for good
	ResultRetry     = "retry"     // a transient error; asynq retries the job
	ResultBusy      = "busy"      // another worker holds the branch; the job waits its turn
	ResultNoop      = "noop"      // nothing to do (no command, duplicate, already finished, trigger off)
	ResultAccepted  = "accepted"  // an intake queued a run or a decision
	ResultReplied   = "replied"   // an intake answered at once (help, status, a configuration error)
	ResultDecided   = "decided"   // a decision was applied
	ResultRefused   = "refused"   // not allowed, or a decision that did not apply; the reply says why
	ResultAborted   = "aborted"
	ResultWaiting   = "waiting_ci" // the tasks are done; the run waits for the pull request's CI
	ResultPaused    = "paused"     // a person paused the run; it waits to be resumed
	ResultInvalid   = "invalid"    // a payload that can never be processed
	ResultQueued    = "queued"     // the fair gate had no slot for the run's installation yet; it waits its turn
)

// QueueInspector is the part of *asynq.Inspector the queue-size gauge reads.
type QueueInspector interface {
	GetQueueInfo(queue string) (*asynq.QueueInfo, error)
}

// NewMetrics registers the metrics on reg. When insp is not nil, akira_queue_tasks reports the size of
// each of the queues, read from Redis when Prometheus scrapes.
func NewMetrics(reg prometheus.Registerer, insp QueueInspector, queues ...string) (*Metrics, error) {
	m := &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "akira_jobs_total", Help: "Jobs processed, by task type and result.",
		}, []string{"type", "result"}),
		taskDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "akira_task_duration_seconds", Help: "Time from a task's start to its checkpoint, skip or escalation.",
			Buckets: []float64{10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200},
		}, []string{"result"}),
		attempts: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "akira_task_attempts", Help: "Attempts a task took, by how it ended.",
			Buckets: []float64{1, 2, 3, 4, 5, 7, 10},
		}, []string{"result"}),
		escalations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "akira_escalations_total", Help: "Tasks parked for a human decision.",
		}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "akira_agent_tokens_total", Help: "Tokens the agents consumed, by direction (input, output).",
		}, []string{"direction"}),
		cost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "akira_agent_cost_usd_total", Help: "What the agents cost, in USD, where the model has a price.",
		}),
		reapedRuns: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "akira_runs_reaped_total", Help: "Runs whose worker died, continued by the reaper.",
		}),
		redelivered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "akira_redeliveries_total", Help: "Failed webhook deliveries the sweeper asked GitHub to redeliver, by result.",
		}, []string{"result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "akira_transitions_refused_total", Help: "Events the run's transition table did not allow in the run's state, by state and event.",
		}, []string{"from", "event"}),
	}
	cs := []prometheus.Collector{m.jobs, m.taskDuration, m.attempts, m.escalations, m.tokens, m.cost, m.reapedRuns, m.redelivered, m.refused}
	if insp != nil {
		if len(queues) == 0 {
			return nil, errors.New("metrics: a queue inspector needs the queues it reads: pass queue.Queue (or your workers' queues)")
		}
		cs = append(cs, &queueCollector{insp: insp, queues: queues, desc: prometheus.NewDesc(
			"akira_queue_tasks", "Tasks in the asynq queue, by state.", []string{"queue", "state"}, nil)})
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Job counts a finished job of type typ by its result (a Result constant). A nil m counts nothing.
func (m *Metrics) Job(typ, result string) {
	if m != nil {
		m.jobs.WithLabelValues(typ, result).Inc()
	}
}

// Task observes a task the engine finished: its result, how long it took and its attempts.
func (m *Metrics) Task(result string, seconds float64, attempts int) {
	if m == nil {
		return
	}
	if seconds > 0 {
		m.taskDuration.WithLabelValues(result).Observe(seconds)
	}
	if attempts > 0 {
		m.attempts.WithLabelValues(result).Observe(float64(attempts))
	}
}

// RefusedTransition counts an event the lifecycle's table refused (Store.OnRefused).
func (m *Metrics) RefusedTransition(te *lifecycle.TransitionError) {
	if m != nil {
		from := te.From
		if te.Task != "" {
			from = "task " + from
		}
		m.refused.WithLabelValues(from, string(te.Event)).Inc()
	}
}

// Reaped counts a run the reaper re-enqueued because its worker died.
func (m *Metrics) Reaped() {
	if m != nil {
		m.reapedRuns.Inc()
	}
}

// Redelivery counts a redelivery the sweep asked GitHub for, by its result.
func (m *Metrics) Redelivery(result string) {
	if m != nil {
		m.redelivered.WithLabelValues(result).Inc()
	}
}

// Escalated counts an escalation.
func (m *Metrics) Escalated() {
	if m != nil {
		m.escalations.Inc()
	}
}

// Usage counts a model call's tokens and cost.
func (m *Metrics) Usage(in, out int64, usd float64) {
	if m == nil {
		return
	}
	if in > 0 {
		m.tokens.WithLabelValues("input").Add(float64(in))
	}
	if out > 0 {
		m.tokens.WithLabelValues("output").Add(float64(out))
	}
	if usd > 0 {
		m.cost.Add(usd)
	}
}

// queueCollector reads the queue sizes at scrape time, so the gauge is right whichever process
// (web or worker) is scraped.
type queueCollector struct {
	insp   QueueInspector
	queues []string
	desc   *prometheus.Desc
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	for _, q := range c.queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			// A queue that never had a task does not exist yet; anything else is worth a log line,
			// but a scrape must not fail because Redis hiccuped.
			slog.Debug("jobs: queue size unavailable", "queue", q, "err", err)
			continue
		}
		for state, n := range map[string]int{
			"pending": info.Pending, "active": info.Active, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived, "completed": info.Completed,
		} {
			ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), q, state)
		}
	}
}
