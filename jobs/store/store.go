// Package store keeps what Akira remembers in Redis, a small type per concern: run records and
// their tasks (Records), the list of runs (Listing), API tokens (Keyring), the audit trail, plans
// handed off through the API (Handoffs), lessons and base-branch memory (Memory), attempt logs
// (Logs), once-only marks for GitHub deliveries (Dedupe), task durations (History), notification
// rate slots (Slots), the branches on each base branch and whether their base moved (Bases), when
// each head of a fork's pull request was first seen (ForkHeads) and branch locks (Locker). Every change to a run is a read-modify-write inside
// WATCH/MULTI, so two writers never lose each other's update and a conditional transition (parked →
// queued only when still parked on that task at that head) cannot race.
package store

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// conn is what every concern shares: the client, the prefix of every key and the clock.
type conn struct {
	rdb    redis.UniversalClient
	prefix string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (s *conn) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// Store holds one of each concern on one Redis and one prefix. A flow keeps the concerns it uses
// (a *Records, a *Keyring) rather than the whole; the promoted methods keep callers that take a
// *Store, such as the admin API, reading as they did.
type Store struct {
	*conn
	*Records
	*Listing
	*Keyring
	*AuditTrail
	*Handoffs
	*Memory
	*Logs
	*Timelines
	*Spend
	*Dedupe
	*History
	*Slots
	*Bases
	*ForkHeads
}

// NewStore returns a store whose keys start with prefix (DefaultPrefix when empty).
func NewStore(rdb redis.UniversalClient, prefix string) *Store {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	c := &conn{rdb: rdb, prefix: prefix}
	listing := &Listing{conn: c}
	audit := &AuditTrail{conn: c}
	return &Store{
		conn:       c,
		Records:    &Records{conn: c, listing: listing, tasks: taskCache{check: checkInPlace}},
		Listing:    listing,
		Keyring:    &Keyring{conn: c, audit: audit},
		AuditTrail: audit,
		Handoffs:   &Handoffs{conn: c},
		Memory:     &Memory{conn: c},
		Logs:       &Logs{conn: c},
		Timelines:  &Timelines{conn: c},
		Spend:      &Spend{conn: c},
		Dedupe:     &Dedupe{conn: c},
		History:    &History{conn: c},
		Slots:      &Slots{conn: c},
		Bases:      &Bases{conn: c},
		ForkHeads:  &ForkHeads{conn: c},
	}
}

// Records keeps run records: a run's state in one key, its tasks one hash field each, the branch's
// active run, and the sets of runs running, waiting for CI and with effects left to perform.
type Records struct {
	*conn
	listing *Listing
	// Retention is the TTL of a finished run's state (DefaultStateRetention when zero).
	Retention time.Duration
	// StaleAfter: see DefaultStaleAfter.
	StaleAfter time.Duration
	// OnRefused, when set, hears of every event the lifecycle's table refused (for the metrics).
	OnRefused func(*lifecycle.TransitionError)
	// tasks are the tasks of the runs this store changed last (see tasks.go).
	tasks taskCache
}

// Listing lists runs newest first, filtered, a page at a time, from an index kept beside the records.
type Listing struct{ *conn }

// Keyring keeps the operators' API tokens (their hashes only) and the dashboard's session key; it
// audits every token created or revoked on audit.
type Keyring struct {
	*conn
	audit *AuditTrail
}

// AuditTrail keeps the last actions people took through the API and on GitHub, in a capped list
// the API reads and in a stream a relay delivers to the operator's sink.
type AuditTrail struct {
	*conn
	// StreamMax bounds the stream (DefaultAuditStreamMax when zero).
	StreamMax int64
}

// Handoffs keeps plans handed off through the API and the Idempotency-Keys that started them.
type Handoffs struct{ *conn }

// Memory keeps what a repository taught Akira: lessons, and what its base branch needed last time.
type Memory struct{ *conn }

// Logs keeps attempts' logs, capped, compressed, masked, for a while.
type Logs struct{ *conn }

// Dedupe remembers what was done once only: replies posted, deliveries recovered, epochs seen.
type Dedupe struct{ *conn }

// History keeps each repository's recent task durations, for estimates.
type History struct{ *conn }

// Slots rations notifications per sink and minute.
type Slots struct{ *conn }

// Client is the Redis client the store writes with, for the asynq clients and inspectors that
// share its connection pool.
func (s *conn) Client() redis.UniversalClient { return s.rdb }
