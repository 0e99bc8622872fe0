package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// AuditEntry is one control action taken through the API or the dashboard.
type AuditEntry struct {
	Time   time.Time `json:"time"`
	Token  string    `json:"token"`
	Via    string    `json:"via"` // "api" or "dashboard"
	Action string    `json:"action"`
	RunID  string    `json:"run_id"`
	TaskID string    `json:"task_id,omitempty"`
	Repo   string    `json:"repo,omitempty"`
	Result string    `json:"result"`
}

// maxAudit bounds the audit list; older entries go.
const maxAudit = 10000

func (s *AuditTrail) auditKey() string { return s.prefix + "audit" }

// Audit records an entry, newest first.
func (s *AuditTrail) Audit(ctx context.Context, e AuditEntry) error {
	data, _ := json.Marshal(e)
	if _, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, s.auditKey(), data)
		p.LTrim(ctx, s.auditKey(), 0, maxAudit-1)
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
			out = append(out, e)
		}
	}
	return out, nil
}
