package runner

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/judge"
	"github.com/akira-bot/akira/runner/timeline"
	"github.com/akira-bot/akira/runner/verify"
	"github.com/akira-bot/akira/runner/workspace"
)

// TimelineSink keeps the timeline of each attempt of a run (see package timeline): the App with
// the attempt's log, akira run beside its local state. Record gets one event at a time, masked
// and bounded, in the order of each attempt's Seq; it may be called from the proxy's and the
// agent's goroutines while an attempt runs, never from two at once. Its error is logged, not
// fatal: a timeline not kept is a loss for later reading, not a reason to stop the run.
type TimelineSink interface {
	Record(ctx context.Context, ev timeline.Event) error
}

// timelineSink is a run's sink, shared by the engines of its parallel tasks: one event at a time,
// each masked and bounded first.
type timelineSink struct {
	mu     sync.Mutex
	next   TimelineSink
	mask   *timeline.Masker
	log    *slog.Logger
	warned bool
}

// withTimeline makes o's sink the run's: masked with Secrets and the model keys the sandbox
// withholds, one event at a time. A worker of a parallel run shares its run's.
func withTimeline(o *Options) {
	if o.Timeline == nil {
		return
	}
	if _, shared := o.Timeline.(*timelineSink); shared {
		return
	}
	secrets := append(append([]string{}, o.Secrets...), o.Sandbox.Withhold.Values...)
	o.Timeline = &timelineSink{next: o.Timeline, mask: timeline.NewMasker(secrets...), log: o.Logger}
}

func (s *timelineSink) Record(ctx context.Context, ev timeline.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.next.Record(ctx, s.mask.Clean(ev)); err != nil && !s.warned {
		// Once per run: a sink that is down would otherwise log every step of every attempt.
		s.warned = true
		s.log.Warn("runner: the attempts' timeline is not kept", "task", ev.TaskID, "attempt", ev.Attempt, "err", err)
	}
	return nil
}

// attemptRecord is one attempt's timeline as it is recorded: its events numbered in order, with the
// attempt's cost so far, and the events an agent drives bounded.
type attemptRecord struct {
	sink    TimelineSink
	ctx     context.Context
	runID   string
	taskID  string
	attempt int
	start   time.Time

	mu        sync.Mutex
	seq       int
	cost      float64
	estimated bool
	kept      int
	dropped   map[timeline.Kind]int
	ended     bool
}

// startRecord opens the timeline of attempt n of t, nil when the run keeps none.
func (e *engine) startRecord(ctx context.Context, taskID string, n int, retry bool) *attemptRecord {
	if e.o.Timeline == nil {
		return nil
	}
	rec := &attemptRecord{sink: e.o.Timeline, ctx: context.WithoutCancel(ctx), runID: e.o.RunID, taskID: taskID, attempt: n,
		start: time.Now(), dropped: map[timeline.Kind]int{}}
	rec.add(timeline.Event{Kind: timeline.KindAttemptStarted, Start: &timeline.Start{Commit: e.ws.Head(), MaxAttempts: e.o.MaxAttempts,
		Retry: retry, RunCostUSD: e.spent().Usage.CostUSD}})
	return rec
}

// add records ev as the attempt's next event. It is safe from any goroutine; a nil record keeps
// nothing.
func (r *attemptRecord) add(ev timeline.Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	if ev.Call != nil {
		// A call not kept still cost what it cost.
		r.cost += ev.Call.CostUSD
		r.estimated = r.estimated || ev.Call.Estimated
	}
	if timeline.Bounded(ev.Kind) {
		if r.kept >= timeline.MaxEvents {
			r.dropped[ev.Kind]++
			return
		}
		r.kept++
	}
	r.seq++
	ev.V, ev.Seq, ev.Time = timeline.Version, r.seq, time.Now().UTC()
	ev.RunID, ev.TaskID, ev.Attempt, ev.CostUSD = r.runID, r.taskID, r.attempt, r.cost
	if ev.Kind == timeline.KindAttemptEnded {
		r.ended = true
		ev.End.Duration = time.Since(r.start)
		ev.End.Estimated = ev.End.Estimated || r.estimated
		if len(r.dropped) > 0 {
			ev.End.Dropped = r.dropped
		}
	}
	// Under the lock: the sink gets the attempt's events in the order of their numbers.
	_ = r.sink.Record(r.ctx, ev)
}

// hook is what a source outside the engine (an egress session, the agent) records through, nil
// when the attempt keeps no timeline. by names who an egress refusal stopped.
func (r *attemptRecord) hook(by string) func(timeline.Event) {
	if r == nil {
		return nil
	}
	return func(ev timeline.Event) {
		if ev.Refusal != nil {
			ref := *ev.Refusal
			ref.By = by
			ev.Refusal = &ref
		}
		r.add(ev)
	}
}

// costSoFar is what the attempt's model calls cost so far.
func (r *attemptRecord) costSoFar() float64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cost
}

func (r *attemptRecord) agentFinished(res agent.Result, failure string) {
	r.add(timeline.Event{Kind: timeline.KindAgentFinished, Agent: &timeline.AgentEnd{Duration: res.Duration, Error: failure}})
}

func (r *attemptRecord) filesChanged(changes []workspace.Change) {
	for _, c := range changes {
		r.add(timeline.Event{Kind: timeline.KindFileChanged, File: &timeline.File{Path: c.Path, Status: c.Status,
			Added: c.Added, Deleted: c.Deleted, Binary: c.Binary}})
	}
}

func (r *attemptRecord) verified(results []verify.Result) {
	for _, v := range results {
		r.add(timeline.Event{Kind: timeline.KindVerify, Command: &timeline.Command{Command: v.Command, ExitCode: v.ExitCode,
			Passed: v.Passed(), Duration: v.Duration, TimedOut: v.TimedOut, Tail: v.Output}})
	}
}

// judged records the judge's model use (took: how long it was asked for), then its verdict (nil: it
// gave none, jerr says why).
func (r *attemptRecord) judged(v *judge.Verdict, usage agent.Usage, took time.Duration, jerr error, minConfidence float64) {
	model := ""
	if v != nil {
		model = v.Model
	}
	if usage != (agent.Usage{}) {
		r.add(timeline.Event{Kind: timeline.KindModelCall, Call: &timeline.ModelCall{Source: timeline.SourceJudge, Model: model,
			InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens, CostUSD: usage.CostUSD, Estimated: usage.Estimated, Duration: took}})
	}
	out := &timeline.Verdict{MinConfidence: minConfidence, Model: model}
	if jerr != nil {
		out.Error = jerr.Error()
	} else {
		out.Passed, out.Confidence = v.Passed(minConfidence), v.Confidence
		for _, c := range v.Criteria {
			if !c.Pass {
				out.Failed = append(out.Failed, c.Criterion+": "+c.Reason)
			}
		}
	}
	r.add(timeline.Event{Kind: timeline.KindJudged, Verdict: out})
}
