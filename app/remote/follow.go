package remote

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/akira-bot/akira/app/admin"
)

// Event is a change in a followed run, as a line for people.
type Event struct {
	// Kind is status, task_started, checkpoint or escalation.
	Kind   string `json:"kind"`
	RunID  string `json:"run_id"`
	TaskID string `json:"task_id,omitempty"`
	// Escalation is the escalation's number for POST /runs/{id}/escalations/{n} (kind escalation).
	Escalation int    `json:"escalation,omitempty"`
	Text       string `json:"text"`
}

// maxPollFailures is how many polls in a row may fail (the server restarting, a network blip)
// before following gives up.
const maxPollFailures = 10

// Follow polls a run every interval, telling emit what changed (a task started, a checkpoint, an
// escalation, the run's status), until the run ends or ctx does; it returns the run as last read.
func (c *Client) Follow(ctx context.Context, id string, interval time.Duration, emit func(Event)) (admin.RunDetail, error) {
	if interval <= 0 {
		interval = 2 * time.Second
	}
	var last admin.RunDetail
	seen := map[string]bool{}
	failures := 0
	first := true
	for {
		run, err := c.Run(ctx, id)
		switch {
		case err == nil:
			failures = 0
			diff(last, run, first, seen, emit)
			last, first = run, false
			if Ended(run.Status) {
				return run, nil
			}
		case ctx.Err() != nil:
			return last, ctx.Err()
		case StatusOf(err) == 0 || StatusOf(err) >= 500:
			if failures++; failures >= maxPollFailures {
				return last, fmt.Errorf("remote: following run %s: %w", id, err)
			}
		default:
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(interval):
		}
	}
}

// diff emits what changed between two reads of a run; seen keeps what was told already, so that
// a task's start or an escalation is told once however the polls fall.
func diff(prev, cur admin.RunDetail, first bool, seen map[string]bool, emit func(Event)) {
	once := func(key string, ev Event) {
		if !seen[key] {
			seen[key] = true
			ev.RunID = cur.ID
			emit(ev)
		}
	}
	status := func() {
		if !first && prev.Status == cur.Status {
			return
		}
		text := "run " + cur.ID + ": " + cur.Status
		if cur.Status == "parked" && cur.WaitingOn != "" {
			// People read "needs a decision"; "parked" is the state's name in the API.
			text = "run " + cur.ID + ": task " + cur.WaitingOn + " needs a decision"
		}
		if cur.Error != "" {
			text += ": " + cur.Error
		}
		if cur.PRURL != "" {
			text += " · " + cur.PRURL
		}
		emit(Event{Kind: "status", RunID: cur.ID, Text: text})
	}
	// The run's end is told after what led to it; any other status before what it leads to.
	if Ended(cur.Status) {
		defer status()
	} else {
		status()
	}
	for _, t := range cur.Tasks {
		if t.Status == "running" || t.Attempts > 0 || t.Checkpoint != "" {
			once("start:"+t.ID, Event{Kind: "task_started", TaskID: t.ID, Text: "task " + t.ID + " started: " + t.Title})
		}
		if t.Checkpoint != "" {
			sha := t.Checkpoint
			if len(sha) > 7 {
				sha = sha[:7]
			}
			once("checkpoint:"+t.ID, Event{Kind: "checkpoint", TaskID: t.ID, Text: "task " + t.ID + " checkpoint " + sha + ": " + t.Title})
		}
	}
	for i, p := range cur.Parked {
		key := "parked:" + p.TaskID + ":" + p.Since.String()
		text := fmt.Sprintf("escalation %d: task %s needs a decision", i+1, p.TaskID)
		if p.Reason != "" {
			text += " (" + p.Reason + ")"
		}
		if p.Summary != "" {
			text += ": " + p.Summary
		}
		once(key, Event{Kind: "escalation", TaskID: p.TaskID, Escalation: i + 1, Text: text})
	}
	// A task parked again after an answer is a new escalation.
	for k := range seen {
		if len(k) > 7 && k[:7] == "parked:" && !slices.ContainsFunc(cur.Parked, func(p admin.ParkedTask) bool {
			return k == "parked:"+p.TaskID+":"+p.Since.String()
		}) {
			delete(seen, k)
		}
	}
}
