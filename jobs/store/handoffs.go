package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// HandoffTTL is how long an Idempotency-Key returns the run it started, and how long a handoff's
// record answers for a run that was not created.
const HandoffTTL = 24 * time.Hour

// Handoff is what the API answers for a handoff, kept for HandoffTTL: a repeat with the same key
// gets it again, and the run's id answers with it until the run job has created the run.
type Handoff struct {
	ID        string    `json:"id"`
	Repo      string    `json:"repo"`
	Base      string    `json:"base,omitempty"`
	Branch    string    `json:"branch"`
	Reference string    `json:"reference,omitempty"`
	Created   time.Time `json:"created"`
	// Tasks is the number of tasks of a plan given as text (0 when the plan is a file).
	Tasks int `json:"tasks,omitempty"`
	// Error is why the handoff did not become a run (no installation, a bad configuration).
	Error string `json:"error,omitempty"`
}

// HandoffBranch is the branch of a handed-off run: the repository's branch prefix (DefaultBranchPrefix
// until its configuration is read) and the run's id.
func HandoffBranch(prefix, id string) string { return prefix + "handoff-" + id }

func (s *Handoffs) handoffKey(id string) string { return s.prefix + "handoff:" + id }

// idempotencyKey is where a token's Idempotency-Key is claimed: by the token's ID, so that another
// token of the same name (revoked and created again) starts afresh.
func (s *Handoffs) idempotencyKey(tokenID, key string) string {
	return s.prefix + "idem:" + tokenHash(tokenID+"\x00"+key)
}

// KeyReusedError is StartHandoff's answer to an Idempotency-Key that started a run for another
// request in the last HandoffTTL: a retry sends the same request, so this is a mistake to report,
// never the first run to return.
type KeyReusedError struct {
	// RunID is the run the key started.
	RunID string
}

func (e *KeyReusedError) Error() string {
	return "jobs: the Idempotency-Key started run " + e.RunID + " for another request"
}

func (s *Handoffs) forget(ctx context.Context, keys ...string) error {
	keys = slices.DeleteFunc(keys, func(k string) bool { return k == "" })
	if len(keys) == 0 {
		return nil
	}
	return s.rdb.Del(context.WithoutCancel(ctx), keys...).Err()
}

// Handoff reads the record of a handoff by its run's id; ErrNotFound after HandoffTTL.
func (s *Handoffs) Handoff(ctx context.Context, id string) (Handoff, error) {
	data, err := s.rdb.Get(ctx, s.handoffKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return Handoff{}, ErrNotFound
	}
	if err != nil {
		return Handoff{}, fmt.Errorf("jobs: handoff %s: %w", id, err)
	}
	var h Handoff
	if err := json.Unmarshal(data, &h); err != nil {
		return Handoff{}, fmt.Errorf("jobs: handoff %s: %w", id, err)
	}
	return h, nil
}

// failHandoff records why a handoff will never become a run, for whoever follows it through the API.
func (s *Handoffs) FailHandoff(ctx context.Context, id, reason string) error {
	return s.UpdateHandoff(ctx, id, func(h *Handoff) { h.Error = reason })
}

func (s *Handoffs) UpdateHandoff(ctx context.Context, id string, change func(*Handoff)) error {
	h, err := s.Handoff(ctx, id)
	if err != nil {
		return err
	}
	change(&h)
	data, _ := json.Marshal(h)
	if err := s.rdb.Set(ctx, s.handoffKey(id), data, redis.KeepTTL).Err(); err != nil {
		return fmt.Errorf("jobs: handoff %s: %w", id, err)
	}
	return nil
}

// Claim records h and, when key is set, claims the token's Idempotency-Key for it; created is false
// when the key was claimed in the last HandoffTTL, and the handoff returned is then the first one.
// The key is claimed with SET NX and an expiry, so two concurrent repeats start one run; it holds the
// run's id and the request's fingerprint fp, and a repeat whose request differs is a *KeyReusedError.
func (s *Handoffs) Claim(ctx context.Context, h Handoff, tokenID, key, fp string) (Handoff, bool, error) {
	id := h.ID
	data, _ := json.Marshal(h)
	rdb := s.rdb
	// The record is written before the key is claimed: a concurrent repeat that loses the claim then
	// always finds the winner's record.
	if err := rdb.Set(ctx, s.handoffKey(id), data, HandoffTTL).Err(); err != nil {
		return Handoff{}, false, fmt.Errorf("jobs: handoff: %w", err)
	}
	// Listed from now on (PendingHandoffs), not only once a worker has made it a run.
	if err := rdb.ZAdd(ctx, s.handoffsKey(), redis.Z{Score: indexScore(h.Created), Member: id}).Err(); err != nil {
		return Handoff{}, false, errors.Join(fmt.Errorf("jobs: handoff: %w", err), s.forget(ctx, s.handoffKey(id)))
	}
	var idem string
	if key != "" {
		idem = s.idempotencyKey(tokenID, key)
		ok, err := rdb.SetNX(ctx, idem, id+" "+fp, HandoffTTL).Result()
		if err != nil {
			return Handoff{}, false, errors.Join(fmt.Errorf("jobs: handoff: %w", err), s.forget(ctx, s.handoffKey(id)))
		}
		if !ok {
			if err := s.forget(ctx, s.handoffKey(id)); err != nil {
				return Handoff{}, false, err
			}
			claim, err := rdb.Get(ctx, idem).Result()
			if err != nil {
				return Handoff{}, false, fmt.Errorf("jobs: handoff: the first request of this key: %w", err)
			}
			// A claim without a fingerprint was made before requests had one: it is taken at its word.
			first, firstFP, _ := strings.Cut(claim, " ")
			if firstFP != "" && firstFP != fp {
				return Handoff{}, false, &KeyReusedError{RunID: first}
			}
			prev, err := s.Handoff(ctx, first)
			if err != nil {
				return Handoff{}, false, err
			}
			return prev, false, nil
		}
	}
	return h, true, nil
}

// Drop forgets the handoff id and the token's Idempotency-Key that claimed it: nothing was queued,
// and the key must not keep answering with a run that will never exist.
func (s *Handoffs) Drop(ctx context.Context, id, tokenID, key string) error {
	keys := []string{s.handoffKey(id)}
	if key != "" {
		keys = append(keys, s.idempotencyKey(tokenID, key))
	}
	return s.forget(ctx, keys...)
}

// handoffsKey indexes the handoffs by creation time, for PendingHandoffs.
func (s *Handoffs) handoffsKey() string { return s.prefix + "handoffs" }

// PendingHandoffs are the handoffs of the last HandoffTTL that are not runs yet, newest first: the
// API accepted them and no worker has made them runs (or one found they cannot be, Error says why).
// A listing of runs shows them, so that a run is listed from the moment it was accepted.
func (s *Handoffs) PendingHandoffs(ctx context.Context) ([]Handoff, error) {
	key := s.handoffsKey()
	oldest := indexScore(time.Now().Add(-HandoffTTL))
	if err := s.rdb.ZRemRangeByScore(ctx, key, "-inf", "("+strconv.FormatFloat(oldest, 'f', 0, 64)).Err(); err != nil {
		return nil, fmt.Errorf("jobs: pending handoffs: %w", err)
	}
	ids, err := s.rdb.ZRevRange(ctx, key, 0, -1).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	records := make([]*redis.StringCmd, len(ids))
	runs := make([]*redis.IntCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			records[i], runs[i] = p.Get(ctx, s.handoffKey(id)), p.Exists(ctx, s.runKey(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("jobs: pending handoffs: %w", err)
	}
	var out []Handoff
	var done []any
	for i, id := range ids {
		data, err := records[i].Bytes()
		var h Handoff
		switch {
		case err != nil || json.Unmarshal(data, &h) != nil:
			done = append(done, id) // expired, or forgotten: nothing to list
		case runs[i].Val() != 0:
			done = append(done, id) // a run now, listed as one: the index keeps only what is pending
		default:
			out = append(out, h)
		}
	}
	if len(done) > 0 {
		if err := s.rdb.ZRem(ctx, key, done...).Err(); err != nil {
			return nil, fmt.Errorf("jobs: pending handoffs: %w", err)
		}
	}
	return out, nil
}
