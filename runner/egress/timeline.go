package egress

import (
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/timeline"
)

// What a session tells its attempt's timeline (SessionConfig.Record): each model call as it ends,
// metered and priced, or refused and why; and the first refusal of each destination. The events
// carry no run, task or attempt: the recorder the hook belongs to adds them, and their order.

// record hands ev to the session's hook, if any. Callers hold no lock of the session: the hook may
// take its time.
func (s *Session) record(ev timeline.Event) {
	if s.cfg.Record != nil {
		s.cfg.Record(ev)
	}
}

// modelPath is the path a call asked for of the model endpoint, without the route's prefix.
func modelPath(path string) string {
	if p := strings.TrimPrefix(path, ModelPath); p != "" {
		return p
	}
	return "/"
}

// callRefused records a model call the session answered itself, without forwarding it; path is
// the one the CLI asked for of the model endpoint (modelPath of the request's, or the route's
// cleaned one).
func (s *Session) callRefused(method, path, why string) {
	s.record(timeline.Event{Kind: timeline.KindModelCall, Call: &timeline.ModelCall{Source: timeline.SourceProxy,
		Model: s.cfg.Model.Model, Method: method, Path: path, Refused: why}})
}

// callAnswered records a call the model endpoint answered with an error, or did not answer: no
// usage to meter.
func (s *Session) callAnswered(c *callMeter, status int, failure string) {
	s.record(timeline.Event{Kind: timeline.KindModelCall, Call: &timeline.ModelCall{Source: timeline.SourceProxy,
		Model: s.cfg.Model.Model, Method: c.method, Path: c.path, Status: status, Duration: time.Since(c.start), Error: failure}})
}

// callMetered records a call metered: its tokens, and their cost (priced false: the model has none).
func (s *Session) callMetered(c *callMeter, model string, t Tokens, usd float64, priced, estimated, streamed bool) {
	status := c.status
	s.record(timeline.Event{Kind: timeline.KindModelCall, Call: &timeline.ModelCall{Source: timeline.SourceProxy,
		Model: model, Method: c.method, Path: c.path, Status: status, InputTokens: t.Input, OutputTokens: t.Output,
		CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, CostUSD: usd, Unpriced: !priced, Estimated: estimated,
		Streamed: streamed, Duration: time.Since(c.start)}})
}

// destinationRefused records the first refusal of a destination. A call the model route refused
// (Path set) is a model call of the timeline already (callRefused).
func (s *Session) destinationRefused(r *Refused) {
	if r.Path != "" {
		return
	}
	s.record(timeline.Event{Kind: timeline.KindEgressRefused, Refusal: &timeline.Refusal{Host: r.Host, Port: r.Port, Reason: r.Reason}})
}
