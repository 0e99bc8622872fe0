package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ways an action reaches Akira (AuditEntry.Via). "API" and "dashboard" are spelled as the first
// entries were, so that old and new entries read the same.
const (
	ViaComment    = "comment"
	ViaLabel      = "label"
	ViaAssignment = "assignment"
	ViaAPI        = "API"
	ViaMCP        = "MCP"
	ViaDashboard  = "dashboard"
	ViaCLI        = "cli"
)

// Token actions audited by the Keyring.
const (
	ActionTokenCreate = "token_create"
	ActionTokenRevoke = "token_revoke"
)

// AuditEntry is one action: who did what, through what, with what result, on which ids. Entries
// written before Actor existed have Token only; AuditLog fills Actor from it.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Actor is who acted: an API token's name, a GitHub login, or the operator at the command line.
	Actor string `json:"actor,omitempty"`
	// Token is the name of the API token that acted, if one did.
	Token string `json:"token"`
	// Via is how the action came: ViaComment, ViaLabel, ViaAssignment, ViaAPI, ViaMCP, ViaDashboard or ViaCLI.
	Via    string `json:"via"`
	Action string `json:"action"`
	Result string `json:"result"`
	// Target names what the action was on when it is not a run (a token: "token:NAME").
	Target         string `json:"target,omitempty"`
	InstallationID int64  `json:"installation_id,omitempty"`
	Repo           string `json:"repo,omitempty"`
	RunID          string `json:"run_id"`
	TaskID         string `json:"task_id,omitempty"`
	Attempt        int    `json:"attempt,omitempty"`
	DeliveryID     string `json:"delivery_id,omitempty"`
}

// AuditRecord is an entry of the audit stream, with its stream id (unique, increasing).
type AuditRecord struct {
	ID    string
	Entry AuditEntry
}

// maxAudit bounds the audit list; older entries go.
const maxAudit = 10000

// DefaultAuditStreamMax bounds the audit stream (approximately: Redis trims whole nodes). It is the
// backlog a sink may fall behind by before its oldest undelivered entries are trimmed: at a few
// hundred bytes an entry, some tens of megabytes of Redis.
const DefaultAuditStreamMax = 100000

func (s *AuditTrail) auditKey() string { return s.prefix + "audit" }

// AuditStreamKey is the Redis stream every audit entry is appended to, for the sink's relay.
func (s *AuditTrail) AuditStreamKey() string { return s.prefix + "audit-stream" }

func (s *AuditTrail) streamMax() int64 {
	if s.StreamMax > 0 {
		return s.StreamMax
	}
	return DefaultAuditStreamMax
}

// complete fills what a writer may leave out: the time, and the actor of a token's action.
func (s *AuditTrail) complete(e *AuditEntry) {
	if e.Time.IsZero() {
		e.Time = s.now()
	}
	if e.Actor == "" {
		e.Actor = e.Token
	}
}

// queueAudit adds an entry's writes to a transaction: the list the API reads and the stream the
// relay delivers, in the same MULTI, so that neither has an entry the other lacks.
func (s *AuditTrail) queueAudit(ctx context.Context, p redis.Pipeliner, e AuditEntry) {
	s.complete(&e)
	data, _ := json.Marshal(e)
	p.LPush(ctx, s.auditKey(), data)
	p.LTrim(ctx, s.auditKey(), 0, maxAudit-1)
	p.XAdd(ctx, &redis.XAddArgs{Stream: s.AuditStreamKey(), MaxLen: s.streamMax(), Approx: true, Values: []any{"entry", data}})
}

// Audit records an entry, newest first, and appends it to the audit stream.
func (s *AuditTrail) Audit(ctx context.Context, e AuditEntry) error {
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		s.queueAudit(ctx, p, e)
		return nil
	}); err != nil {
		return fmt.Errorf("jobs: audit: %w", err)
	}
	return nil
}

// AuditLog returns the newest n entries.
func (s *AuditTrail) AuditLog(ctx context.Context, n int) ([]AuditEntry, error) {
	raw, err := s.rdb.LRange(ctx, s.auditKey(), 0, int64(n)-1).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: audit: %w", err)
	}
	out := make([]AuditEntry, 0, len(raw))
	for _, r := range raw {
		var e AuditEntry
		if json.Unmarshal([]byte(r), &e) == nil {
			if e.Actor == "" {
				e.Actor = e.Token
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// AuditGroup makes the stream's consumer group if it does not exist. A new group starts at the
// stream's beginning: what the stream holds when a sink is first configured is delivered too.
func (s *AuditTrail) AuditGroup(ctx context.Context, group string) error {
	err := s.rdb.XGroupCreateMkStream(ctx, s.AuditStreamKey(), group, "0").Err()
	if err != nil && !strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return fmt.Errorf("jobs: audit group: %w", err)
	}
	return nil
}

// ReadAudit returns up to n entries for consumer, oldest first: first those read by any consumer of
// the group and never acknowledged (claimed for this one: the caller is the group's only reader, see
// the relay's lease), then new ones, waiting up to block for one (not at all when block <= 0).
func (s *AuditTrail) ReadAudit(ctx context.Context, group, consumer string, n int64, block time.Duration) ([]AuditRecord, error) {
	msgs, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: s.AuditStreamKey(), Group: group, Consumer: consumer,
		MinIdle: 0, Start: "0-0", Count: n}).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: audit read: %w", err)
	}
	if len(msgs) == 0 {
		if block <= 0 {
			block = -1 // go-redis sends BLOCK 0, forever, for 0; a negative Block sends none
		}
		streams, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: group, Consumer: consumer,
			Streams: []string{s.AuditStreamKey(), ">"}, Count: n, Block: block}).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return nil, fmt.Errorf("jobs: audit read: %w", err)
		}
		for _, st := range streams {
			msgs = append(msgs, st.Messages...)
		}
	}
	out := make([]AuditRecord, 0, len(msgs))
	for _, m := range msgs {
		r := AuditRecord{ID: m.ID}
		// An entry trimmed while pending has no fields: it is passed on empty for the caller to
		// acknowledge and report, not to deliver.
		if v, ok := m.Values["entry"].(string); ok {
			_ = json.Unmarshal([]byte(v), &r.Entry)
		}
		out = append(out, r)
	}
	return out, nil
}

// AckAudit marks an entry delivered: the group never hands it out again.
func (s *AuditTrail) AckAudit(ctx context.Context, group, id string) error {
	if err := s.rdb.XAck(ctx, s.AuditStreamKey(), group, id).Err(); err != nil {
		return fmt.Errorf("jobs: audit ack: %w", err)
	}
	return nil
}

// AuditBacklog counts the entries of the stream the group has not acknowledged: read and pending,
// or not read yet (the whole stream before the group exists).
func (s *AuditTrail) AuditBacklog(ctx context.Context, group string) (int64, error) {
	groups, err := s.rdb.XInfoGroups(ctx, s.AuditStreamKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("jobs: audit backlog: %w", err)
	}
	for _, g := range groups {
		if g.Name == group {
			return g.Pending + max(g.Lag, 0), nil
		}
	}
	// No group yet: a group starts at the stream's beginning, so all of it is still to deliver.
	n, err := s.rdb.XLen(ctx, s.AuditStreamKey()).Result()
	if err != nil {
		return 0, fmt.Errorf("jobs: audit backlog: %w", err)
	}
	return n, nil
}
