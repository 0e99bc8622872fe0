// Package fair is the gate every run job passes first: per-installation caps, and the least
// recently served installation first, so one installation's backlog does not starve the others.
package fair

// Fair shares across installations: a gate in front of every run job.
//
// All run tasks stay on the one asynq queue (it survives restarts, retries and dedupes by task id,
// and nothing new has to move runs between queues). Once a run job has resolved its run (created
// it, or found it again by id on a retry: Redis only) and before it takes the branch and a
// workspace, it asks the gate for a slot, in one Lua script, so that deciding and taking a slot is
// atomic across every worker process. A job of a rate-limited installation stops even before that
// (Gate.Paused), as do its intake and plan jobs. The gate grants a slot when
//
//   - the installation is not paused by a GitHub rate limit (Gate.Pause),
//   - the installation holds fewer slots than its cap (the operator's fair.max_runs_per_installation
//     or a per-installation override; by default half of the workers, at least one),
//   - and no queued run that should go first is waiting for the free slots: runs of installations
//     that used less worker time recently, then, inside the installation, of repositories that used
//     less, then older runs of the same repository.
//
// A refused job ends at once with a SlotWaitError, which asynq retries after the delay the gate names
// without counting it as a failure (IsFailure, RetryDelay): a waiting run never holds a worker, and a
// worker that picks a run which must wait is free again in milliseconds for the run that must not.
// Asynq's own queue order does not decide anything; the gate does.
//
// Why not asynq's weighted queues or groups: queues are fixed when a worker starts (installations
// come and go) and weights are probabilities, not caps; groups aggregate tasks into one, they do not
// order them. A dispatcher that parks runs in per-installation lists and moves them to asynq would
// need its own crash recovery for runs moved but not yet enqueued; the gate has no such window
// because the task is in asynq from the start.
//
// "Recent worker time" is a sum of the time each installation's (and repository's) run jobs held a
// slot, halved every fair.usage_half_life, plus the time its running jobs have held theirs so far.
// A slot is a lease renewed while the job runs: a worker that dies frees its slots within
// LeaseTTL. Every run that waits is listed (Gate.Queue) with its position and an estimated start,
// for the dashboard and GET /api/v1/queue.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner/config"
)

// Defaults of the fair gate.
const (
	// DefaultTaskQueue is queue.Queue, the queue run tasks are on unless a worker says otherwise (a
	// test in jobs holds the two equal).
	DefaultTaskQueue = "akira"
	// LeaseTTL is how long a run's slot outlives its job's last renewal (every third of it).
	LeaseTTL = 30 * time.Second
	// DefaultUsageHalfLife is how fast past worker time is forgotten.
	DefaultUsageHalfLife = 30 * time.Minute
	// fairWaitTTL is how long a queued run stays listed without being seen: longer than any run job
	// (DefaultTimeout), so a run stuck behind busy workers keeps its place in line.
	fairWaitTTL = 4 * time.Hour
	// fairWorkerTTL is how long a worker process counts after its last heartbeat.
	fairWorkerTTL = 20 * time.Second
)

// SlotWaitError ends a run job that the fair gate did not let in: it is not a failure, and asynq
// tries the job again after Delay (see RetryDelay and IsFailure).
type SlotWaitError struct {
	Installation int64
	Reason       string
	Delay        time.Duration
}

func (e *SlotWaitError) Error() string {
	return fmt.Sprintf("jobs: run of installation %d waits for a slot: %s (next try in %s)", e.Installation, e.Reason, e.Delay)
}

// Gate is the gate. The zero value is not usable; see New. A nil *Gate lets every run in.
type Gate struct {
	rdb    redis.UniversalClient
	prefix string
	cfg    config.Fair
	// Concurrency is this process's worker count: registered by Heartbeat, and the total assumed
	// when no worker process has registered (a web process answering the API).
	Concurrency int
	// Now is the clock (time.Now when nil); tests move it.
	Now func() time.Time
	// TaskQueue is the asynq queue run tasks are on (DefaultTaskQueue when empty): Heartbeat drops the listing
	// of a run whose task is no longer there (deleted by hand), which would otherwise keep a place
	// in line until fairWaitTTL.
	TaskQueue string
	id        string
}

// New returns the gate whose keys start with prefix (DefaultPrefix when empty).
func New(rdb redis.UniversalClient, prefix string, cfg config.Fair, concurrency int) *Gate {
	if prefix == "" {
		prefix = store.DefaultPrefix
	}
	host, _ := os.Hostname()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &Gate{rdb: rdb, prefix: prefix, cfg: cfg, Concurrency: max(concurrency, 1),
		id: fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))}
}

func (f *Gate) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *Gate) keys() []string {
	p := f.prefix + "fair:"
	return []string{p + "workers", p + "workercap", p + "running", p + "leases", p + "waiting", p + "waitinfo", p + "used", p + "paused", p + "seq"}
}

func (f *Gate) halfLife() time.Duration {
	if f.cfg.UsageHalfLife > 0 {
		return time.Duration(f.cfg.UsageHalfLife)
	}
	return DefaultUsageHalfLife
}

func (f *Gate) capsJSON() string {
	caps := map[string]int{}
	for id, n := range f.cfg.Installations {
		caps[strconv.FormatInt(id, 10)] = n
	}
	b, _ := json.Marshal(caps)
	if len(caps) == 0 {
		return "{}"
	}
	return string(b)
}

// fairLib is shared by the scripts: expiry of dead workers, leases and listings, usage with decay,
// and the caps.
const fairLib = `
local K_WORKERS, K_WCAP, K_RUNNING, K_LEASES, K_WAITING, K_WAITINFO, K_USED, K_PAUSED, K_SEQ =
	KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local now = tonumber(ARGV[1])
local halflife = tonumber(ARGV[2])

local function decayed(key)
	local v = redis.call("HGET", K_USED, key)
	if not v then return 0 end
	local sep = string.find(v, "|", 1, true)
	local val, t = tonumber(string.sub(v, 1, sep - 1)), tonumber(string.sub(v, sep + 1))
	return val * math.pow(0.5, math.max(0, now - t) / halflife)
end

local function charge(key, ms)
	redis.call("HSET", K_USED, key, string.format("%.0f", decayed(key) + ms) .. "|" .. now)
end

local function release(task)
	local raw = redis.call("HGET", K_RUNNING, task)
	redis.call("ZREM", K_LEASES, task)
	if not raw then return 0 end
	redis.call("HDEL", K_RUNNING, task)
	local e = cjson.decode(raw)
	local ms = math.max(0, now - e.start)
	charge("i:" .. e.inst, ms)
	charge("r:" .. e.inst .. "/" .. e.repo, ms)
	local d = tonumber(redis.call("HGET", K_USED, "d:" .. e.inst) or "0")
	if d <= 0 then d = ms else d = 0.7 * d + 0.3 * ms end
	redis.call("HSET", K_USED, "d:" .. e.inst, string.format("%.0f", d))
	return 1
end

local function tidy()
	for _, w in ipairs(redis.call("ZRANGEBYSCORE", K_WORKERS, "-inf", now)) do
		redis.call("HDEL", K_WCAP, w)
	end
	redis.call("ZREMRANGEBYSCORE", K_WORKERS, "-inf", now)
	for _, t in ipairs(redis.call("ZRANGEBYSCORE", K_LEASES, "-inf", now)) do
		release(t)
	end
	for _, t in ipairs(redis.call("ZRANGEBYSCORE", K_WAITING, "-inf", now)) do
		redis.call("HDEL", K_WAITINFO, t)
	end
	redis.call("ZREMRANGEBYSCORE", K_WAITING, "-inf", now)
end

local function totalWorkers(fallback)
	local total = 0
	for _, c in ipairs(redis.call("HVALS", K_WCAP)) do total = total + tonumber(c) end
	if total == 0 then total = fallback end
	return total
end

local function capOf(inst, caps, defcap, total)
	local c = caps[inst]
	if c and c > 0 then return c end
	if defcap > 0 then return defcap end
	return math.max(1, math.floor(total / 2))
end
`

// acquireScript grants task a slot or lists it as waiting. ARGV: now, halflife, task, inst, repo,
// lease ms, default cap, caps JSON, fallback total, wait TTL ms, info JSON (for a new listing),
// slot (the run's id: one slot per run, whichever of its jobs holds it).
// Returns {1} or {0, reason, retry ms, rank}.
var acquireScript = redis.NewScript(fairLib + `
local task, inst, repo = ARGV[3], ARGV[4], ARGV[5]
local lease, defcap, caps = tonumber(ARGV[6]), tonumber(ARGV[7]), cjson.decode(ARGV[8])
local fallback, waitttl, slot = tonumber(ARGV[9]), tonumber(ARGV[10]), ARGV[12]
tidy()
-- A slot is the run's: a job of a run that holds one (a retry, the job continuing a dead
-- worker's run) takes it over at once.
if redis.call("HEXISTS", K_RUNNING, slot) == 1 then
	redis.call("ZADD", K_LEASES, now + lease, slot)
	redis.call("ZREM", K_WAITING, task)
	redis.call("HDEL", K_WAITINFO, task)
	return {1}
end
local total = totalWorkers(fallback)
-- what runs now
local running, perInst, runUse = 0, {}, {}
for i, raw in ipairs(redis.call("HVALS", K_RUNNING)) do
	local e = cjson.decode(raw)
	running = running + 1
	perInst[e.inst] = (perInst[e.inst] or 0) + 1
	local ms = math.max(0, now - e.start)
	runUse["i:" .. e.inst] = (runUse["i:" .. e.inst] or 0) + ms
	local rk = "r:" .. e.inst .. "/" .. e.repo
	runUse[rk] = (runUse[rk] or 0) + ms
end
local function usage(key) return decayed(key) + (runUse[key] or 0) end
-- this run's listing: kept, or made now
local mine = redis.call("HGET", K_WAITINFO, task)
local me
if mine then
	me = cjson.decode(mine)
else
	me = cjson.decode(ARGV[11])
	me.seq = redis.call("INCR", K_SEQ)
	me.queued = now
	mine = cjson.encode(me)
end
local function wait(reason, retry, rank)
	redis.call("HSET", K_WAITINFO, task, mine)
	redis.call("ZADD", K_WAITING, now + math.max(waitttl, retry * 3), task)
	return {0, reason, retry, rank}
end
local paused = tonumber(redis.call("HGET", K_PAUSED, inst) or "0")
if paused > now then
	return wait("installation rate-limited by GitHub", paused - now, 0)
end
local mycap = capOf(inst, caps, defcap, total)
if (perInst[inst] or 0) >= mycap then
	-- the runs behind in the installation's own line try less often
	local behind = 0
	local infos = redis.call("HGETALL", K_WAITINFO)
	for i = 1, #infos, 2 do
		if infos[i] ~= task then
			local e = cjson.decode(infos[i + 1])
			if e.inst == inst and e.seq < me.seq then behind = behind + 1 end
		end
	end
	return wait("installation at its cap of " .. mycap .. " runs", 0, behind)
end
if running >= total then
	return wait("every worker is busy", 0, 0)
end
-- who goes first among the waiting runs that could take a slot now
local myI, myR = usage("i:" .. inst), usage("r:" .. inst .. "/" .. repo)
local aheadBy, aheadMine = {}, 0
local infos = redis.call("HGETALL", K_WAITINFO)
for i = 1, #infos, 2 do
	local t = infos[i]
	if t ~= task then
		local e = cjson.decode(infos[i + 1])
		local p = tonumber(redis.call("HGET", K_PAUSED, e.inst) or "0")
		if p <= now and (perInst[e.inst] or 0) < capOf(e.inst, caps, defcap, total) then
			local ahead = false
			if e.inst ~= inst then
				ahead = usage("i:" .. e.inst) < myI
			elseif e.repo ~= repo then
				ahead = usage("r:" .. e.inst .. "/" .. e.repo) < myR
			else
				ahead = e.seq < me.seq
			end
			if ahead then
				if e.inst == inst then aheadMine = aheadMine + 1 end
				aheadBy[e.inst] = (aheadBy[e.inst] or 0) + 1
			end
		end
	end
end
local rank = 0
for i, n in pairs(aheadBy) do
	rank = rank + math.min(n, capOf(i, caps, defcap, total) - (perInst[i] or 0))
end
if rank >= total - running then
	return wait("runs that used less worker time go first", 0, rank)
end
if aheadMine >= mycap - (perInst[inst] or 0) then
	return wait("older runs of the installation go first", 0, rank)
end
redis.call("ZREM", K_WAITING, task)
redis.call("HDEL", K_WAITINFO, task)
redis.call("HSET", K_RUNNING, slot, cjson.encode({inst = inst, repo = repo, start = now, run = me.run, number = me.number, task = task}))
redis.call("ZADD", K_LEASES, now + lease, slot)
return {1}
`)

// renewScript keeps a slot: its lease moves on, and a slot lost meanwhile (Redis flushed, a pause
// longer than the lease) is taken again, since the job is working whatever the books say.
// ARGV: now, halflife, slot, lease ms, entry JSON.
var fairRenewScript = redis.NewScript(fairLib + `
if redis.call("HEXISTS", K_RUNNING, ARGV[3]) == 0 then
	local e = cjson.decode(ARGV[5])
	e.start = now
	redis.call("HSET", K_RUNNING, ARGV[3], cjson.encode(e))
end
redis.call("ZADD", K_LEASES, now + tonumber(ARGV[4]), ARGV[3])
return 1
`)

// fairReleaseScript frees a slot and charges its time. ARGV: now, halflife, slot.
var fairReleaseScript = redis.NewScript(fairLib + `return release(ARGV[3])`)

// fairListScript lists a run's task as waiting, once (a run enqueued is in line before any worker
// sees it). ARGV: now, halflife, task, wait TTL ms, info JSON.
var fairListScript = redis.NewScript(fairLib + `
if redis.call("HEXISTS", K_WAITINFO, ARGV[3]) == 1 then
	return 0
end
local me = cjson.decode(ARGV[5])
me.seq = redis.call("INCR", K_SEQ)
me.queued = now
redis.call("HSET", K_WAITINFO, ARGV[3], cjson.encode(me))
redis.call("ZADD", K_WAITING, now + tonumber(ARGV[4]), ARGV[3])
return 1
`)

// fairPauseScript pauses an installation until ARGV[3] unless it already is for longer.
var fairPauseScript = redis.NewScript(fairLib + `
local cur = tonumber(redis.call("HGET", KEYS[8], ARGV[3]) or "0")
if tonumber(ARGV[4]) > cur then redis.call("HSET", KEYS[8], ARGV[3], ARGV[4]) end
return 1
`)

// fairHeartbeatScript registers a worker process: ARGV: now, halflife, id, concurrency, ttl ms.
var fairHeartbeatScript = redis.NewScript(fairLib + `
redis.call("ZADD", K_WORKERS, now + tonumber(ARGV[5]), ARGV[3])
redis.call("HSET", K_WCAP, ARGV[3], ARGV[4])
return 1
`)

// fairEntry is a run as the gate books it.
type fairEntry struct {
	Inst   string `json:"inst"`
	Repo   string `json:"repo"`
	Run    string `json:"run"`
	Number int    `json:"number,omitempty"`
	Seq    int64  `json:"seq,omitempty"`
	Queued int64  `json:"queued,omitempty"`
	Start  int64  `json:"start,omitempty"`
	// Task is the job holding a slot (running entries are keyed by run).
	Task string `json:"task,omitempty"`
}

// Ticket is a run job as the gate sees it.
type Ticket struct {
	// JobID is the job's asynq task id: the gate lists and grants by it.
	JobID string
	// RunID is the run's id: a run keeps its slot across its jobs (a continuation, a reaped job).
	RunID        string
	Installation int64
	// Repo is "owner/name"; Number the issue or pull request, for the line's view.
	Repo   string
	Number int
}

func entryOf(p Ticket) fairEntry {
	return fairEntry{Inst: strconv.FormatInt(p.Installation, 10), Repo: p.Repo, Run: p.RunID, Number: p.Number}
}

func (f *Gate) run(ctx context.Context, s *redis.Script, args ...any) (any, error) {
	base := []any{f.now().UnixMilli(), f.halfLife().Milliseconds()}
	return s.Run(ctx, f.rdb, f.keys(), append(base, args...)...).Result()
}

// List puts a run in line as soon as it is enqueued, so that it counts (and shows) before a worker
// first sees it. Listing twice is a no-op.
func (f *Gate) List(ctx context.Context, p Ticket) error {
	if f == nil {
		return nil
	}
	info, _ := json.Marshal(entryOf(p))
	if _, err := f.run(ctx, fairListScript, p.JobID, fairWaitTTL.Milliseconds(), string(info)); err != nil {
		return fmt.Errorf("jobs: fair: list %s: %w", p.JobID, err)
	}
	return nil
}

// Acquire asks for a slot for the run job of p: nil when granted, a *SlotWaitError when the run
// must wait (it is then listed as waiting), another error when Redis could not answer.
func (f *Gate) Acquire(ctx context.Context, p Ticket) error {
	if f == nil {
		return nil
	}
	info, _ := json.Marshal(entryOf(p))
	res, err := f.run(ctx, acquireScript, p.JobID, strconv.FormatInt(p.Installation, 10), p.Repo,
		LeaseTTL.Milliseconds(), f.cfg.MaxRunsPerInstallation, f.capsJSON(), f.Concurrency,
		fairWaitTTL.Milliseconds(), string(info), entryOf(p).Run)
	if err != nil {
		return fmt.Errorf("jobs: fair: acquire %s: %w", p.JobID, err)
	}
	out, ok := res.([]any)
	if !ok || len(out) == 0 {
		return fmt.Errorf("jobs: fair: acquire %s: unexpected answer %v", p.JobID, res)
	}
	if n, _ := out[0].(int64); n == 1 {
		return nil
	}
	reason, _ := out[1].(string)
	retryMs, _ := out[2].(int64)
	rank, _ := out[3].(int64)
	return &SlotWaitError{Installation: p.Installation, Reason: reason, Delay: waitDelay(time.Duration(retryMs)*time.Millisecond, rank)}
}

// waitDelay is when a refused run tries again: when its pause ends, else soon for the runs at the
// front of the line (a slot that frees waits at most that long for them) and less often behind.
func waitDelay(pause time.Duration, rank int64) time.Duration {
	if pause > 0 {
		return pause
	}
	return min(time.Second+time.Duration(rank)*250*time.Millisecond, 15*time.Second)
}

// Hold renews the lease of the slot p's job was granted until the func it returns is called; that
// call frees the slot and charges the time held to the installation and the repository.
func (f *Gate) Hold(ctx context.Context, p Ticket) func() {
	if f == nil {
		return func() {}
	}
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	info, _ := json.Marshal(entryOf(p))
	go func() {
		defer close(done)
		t := time.NewTicker(LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
				// A renewal that fails is tried again on the next tick; the lease outlives two.
				_, _ = f.run(hctx, fairRenewScript, entryOf(p).Run, LeaseTTL.Milliseconds(), string(info))
			}
		}
	}()
	return func() {
		cancel()
		<-done
		_, _ = f.run(context.WithoutCancel(ctx), fairReleaseScript, entryOf(p).Run)
	}
}

// Pause holds back new runs of an installation that GitHub rate-limited until the limit ends; runs
// of other installations are not affected.
func (f *Gate) Pause(ctx context.Context, installationID int64, until time.Time) error {
	if f == nil {
		return nil
	}
	_, err := f.run(ctx, fairPauseScript, strconv.FormatInt(installationID, 10), until.UnixMilli())
	if err != nil {
		return fmt.Errorf("jobs: fair: pause installation %d: %w", installationID, err)
	}
	return nil
}

// Paused returns a *SlotWaitError while GitHub rate-limits the installation, nil otherwise: jobs
// other than runs (intake, plan) check it first, so that a rate-limited installation's webhooks wait
// out the limit in asynq rather than on a worker every installation shares.
func (f *Gate) Paused(ctx context.Context, installationID int64) error {
	if f == nil || installationID <= 0 {
		return nil
	}
	v, err := f.rdb.HGet(ctx, f.keys()[7], strconv.FormatInt(installationID, 10)).Int64()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("jobs: fair: is installation %d paused: %w", installationID, err)
	}
	if d := time.UnixMilli(v).Sub(f.now()); d > 0 {
		return &SlotWaitError{Installation: installationID, Reason: "installation rate-limited by GitHub", Delay: d}
	}
	return nil
}

// Heartbeat registers this worker process's concurrency until ctx ends: the sum over live worker
// processes is the total the caps are halves of.
func (f *Gate) Heartbeat(ctx context.Context) {
	if f == nil {
		return
	}
	beat := func() {
		_, _ = f.run(ctx, fairHeartbeatScript, f.id, f.Concurrency, fairWorkerTTL.Milliseconds())
	}
	beat()
	t := time.NewTicker(fairWorkerTTL / 4)
	defer t.Stop()
	insp := asynq.NewInspectorFromRedisClient(f.rdb)
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			_ = f.rdb.ZRem(context.WithoutCancel(ctx), f.keys()[0], f.id).Err()
			_ = f.rdb.HDel(context.WithoutCancel(ctx), f.keys()[1], f.id).Err()
			return
		case <-t.C:
			beat()
			if i%12 == 0 { // every minute
				_ = f.Forget(ctx, insp)
			}
		}
	}
}

// fairForgetScript drops a listing unless its run got a slot meanwhile. ARGV: now, halflife, task.
var fairForgetScript = redis.NewScript(fairLib + `
redis.call("ZREM", K_WAITING, ARGV[3])
return redis.call("HDEL", K_WAITINFO, ARGV[3])
`)

// Unlist drops the listing of a run whose job ended without taking its turn (nothing to do, a
// reply); a run that holds a slot keeps it.
func (f *Gate) Unlist(ctx context.Context, p Ticket) error {
	if f == nil {
		return nil
	}
	if _, err := f.run(ctx, fairForgetScript, p.JobID); err != nil {
		return fmt.Errorf("jobs: fair: unlist %s: %w", p.JobID, err)
	}
	return nil
}

// Forget drops the listings of runs whose asynq task will never come to the gate: gone (deleted by
// hand, its queue removed), archived, or completed without taking its turn.
func (f *Gate) Forget(ctx context.Context, insp *asynq.Inspector) error {
	if f == nil {
		return nil
	}
	queue := f.TaskQueue
	if queue == "" {
		queue = DefaultTaskQueue
	}
	tasks, err := f.rdb.HKeys(ctx, f.keys()[5]).Result()
	if err != nil {
		return fmt.Errorf("jobs: fair: read the line: %w", err)
	}
	for _, id := range tasks {
		info, err := insp.GetTaskInfo(queue, id)
		over := err == nil && (info.State == asynq.TaskStateArchived || info.State == asynq.TaskStateCompleted)
		if over || errors.Is(err, asynq.ErrTaskNotFound) || errors.Is(err, asynq.ErrQueueNotFound) {
			if _, err := f.run(ctx, fairForgetScript, id); err != nil {
				return fmt.Errorf("jobs: fair: forget %s: %w", id, err)
			}
		}
	}
	return nil
}

// Line is the fair gate's view: the workers, and per installation its cap, its running and its
// waiting runs in the order they will start.
type Line struct {
	Workers       int                 `json:"workers"`
	Running       int                 `json:"running"`
	Installations []InstallationQueue `json:"installations"`
}

// InstallationQueue is one installation's share.
type InstallationQueue struct {
	InstallationID int64 `json:"installation_id"`
	Cap            int   `json:"cap"`
	// UsedSeconds is the recent worker time the order goes by (decayed, running jobs included).
	UsedSeconds float64 `json:"used_seconds"`
	// PausedUntil is set while GitHub rate-limits the installation.
	PausedUntil *time.Time  `json:"paused_until,omitempty"`
	Running     []QueuedRun `json:"running"`
	Waiting     []QueuedRun `json:"waiting"`
}

// QueuedRun is a run in the fair queue: running since Started, or waiting at Position (1 is next
// in its installation) with an estimated start (nil when nothing is known yet of how long runs take).
type QueuedRun struct {
	Task           string     `json:"task"`
	RunID          string     `json:"run_id"`
	Repository     string     `json:"repository"`
	Number         int        `json:"number,omitempty"`
	Position       int        `json:"position,omitempty"`
	Queued         *time.Time `json:"queued,omitempty"`
	Started        *time.Time `json:"started,omitempty"`
	EstimatedStart *time.Time `json:"estimated_start,omitempty"`
}

// Queue reads the fair queue. Estimated starts replay the gate's order: each waiting run takes the
// first slot that frees while its installation is under its cap and not paused, slots freeing when
// a run has held one for its installation's average run job time.
func (f *Gate) Queue(ctx context.Context) (Line, error) {
	var out Line
	if f == nil {
		return out, nil
	}
	k := f.keys()
	var wcap, running, waitinfo, used, paused *redis.MapStringStringCmd
	_, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		wcap, running, waitinfo = p.HGetAll(ctx, k[1]), p.HGetAll(ctx, k[2]), p.HGetAll(ctx, k[5])
		used, paused = p.HGetAll(ctx, k[6]), p.HGetAll(ctx, k[7])
		return nil
	})
	if err != nil {
		return out, fmt.Errorf("jobs: fair: read the queue: %w", err)
	}
	now := f.now()
	nowMs := now.UnixMilli()
	for _, c := range wcap.Val() {
		n, _ := strconv.Atoi(c)
		out.Workers += n
	}
	if out.Workers == 0 {
		out.Workers = f.Concurrency
	}
	decayed := func(key string) float64 {
		v, ok := used.Val()[key]
		if !ok {
			return 0
		}
		var val float64
		var t int64
		if _, err := fmt.Sscanf(v, "%g|%d", &val, &t); err != nil {
			return 0
		}
		return val * math.Pow(0.5, float64(max(0, nowMs-t))/float64(f.halfLife().Milliseconds()))
	}
	insts := map[string]*InstallationQueue{}
	inst := func(id string) *InstallationQueue {
		if q, ok := insts[id]; ok {
			return q
		}
		n, _ := strconv.ParseInt(id, 10, 64)
		q := &InstallationQueue{InstallationID: n, Running: []QueuedRun{}, Waiting: []QueuedRun{}, UsedSeconds: decayed("i:"+id) / 1000}
		q.Cap = f.cfg.Installations[n]
		if q.Cap <= 0 {
			q.Cap = f.cfg.MaxRunsPerInstallation
		}
		if q.Cap <= 0 {
			q.Cap = max(1, out.Workers/2)
		}
		if ms, _ := strconv.ParseInt(paused.Val()[id], 10, 64); ms > nowMs {
			t := time.UnixMilli(ms)
			q.PausedUntil = &t
		}
		insts[id] = q
		return q
	}
	avg := func(id string) time.Duration {
		ms, _ := strconv.ParseFloat(used.Val()["d:"+id], 64)
		return time.Duration(ms) * time.Millisecond
	}
	var known time.Duration // any installation's average, for those with none yet
	for key, v := range used.Val() {
		if len(key) > 2 && key[:2] == "d:" {
			if ms, _ := strconv.ParseFloat(v, 64); ms > 0 {
				known = max(known, time.Duration(ms)*time.Millisecond)
			}
		}
	}
	avgOr := func(id string) time.Duration {
		if d := avg(id); d > 0 {
			return d
		}
		return known
	}
	// slots: when each worker is expected to be free; ends: per installation, when its runs end
	var slots []time.Time
	ends := map[string][]time.Time{}
	runningOf := map[string]int{}
	for _, raw := range running.Val() {
		var e fairEntry
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		task := e.Task
		q := inst(e.Inst)
		q.UsedSeconds += float64(max(0, nowMs-e.Start)) / 1000
		started := time.UnixMilli(e.Start)
		q.Running = append(q.Running, QueuedRun{Task: task, RunID: e.Run, Repository: e.Repo, Number: e.Number, Started: &started})
		runningOf[e.Inst]++
		out.Running++
		end := started.Add(avgOr(e.Inst))
		if end.Before(now) {
			end = now
		}
		slots = append(slots, end)
		ends[e.Inst] = append(ends[e.Inst], end)
	}
	for len(slots) < out.Workers {
		slots = append(slots, now)
	}
	type waiter struct {
		task string
		e    fairEntry
	}
	byInst := map[string][]waiter{}
	for task, raw := range waitinfo.Val() {
		var e fairEntry
		if json.Unmarshal([]byte(raw), &e) != nil {
			continue
		}
		inst(e.Inst)
		byInst[e.Inst] = append(byInst[e.Inst], waiter{task, e})
	}
	// Inside an installation: repositories that used less first, then the oldest run.
	for id, ws := range byInst {
		sort.Slice(ws, func(i, j int) bool {
			ui, uj := decayed("r:"+id+"/"+ws[i].e.Repo), decayed("r:"+id+"/"+ws[j].e.Repo)
			if ws[i].e.Repo != ws[j].e.Repo && ui != uj {
				return ui < uj
			}
			return ws[i].e.Seq < ws[j].e.Seq
		})
		byInst[id] = ws
	}
	// Replay: the next start goes to the installation that used least, among those that can start.
	usage := map[string]float64{}
	for id, q := range insts {
		usage[id] = q.UsedSeconds
	}
	next := map[string]int{}
	for {
		sort.Slice(slots, func(i, j int) bool { return slots[i].Before(slots[j]) })
		best, bestAt := "", time.Time{}
		for id, ws := range byInst {
			if next[id] >= len(ws) {
				continue
			}
			q := insts[id]
			at := slots[0]
			if q.PausedUntil != nil && q.PausedUntil.After(at) {
				at = *q.PausedUntil
			}
			if e := ends[id]; len(e) >= q.Cap {
				sort.Slice(e, func(i, j int) bool { return e[i].Before(e[j]) })
				if e[len(e)-q.Cap].After(at) {
					at = e[len(e)-q.Cap]
				}
			}
			if best == "" || at.Before(bestAt) || (at.Equal(bestAt) && usage[id] < usage[best]) {
				best, bestAt = id, at
			}
		}
		if best == "" {
			break
		}
		w := byInst[best][next[best]]
		next[best]++
		q := insts[best]
		queued := time.UnixMilli(w.e.Queued)
		qr := QueuedRun{Task: w.task, RunID: w.e.Run, Repository: w.e.Repo, Number: w.e.Number, Position: next[best], Queued: &queued}
		d := avgOr(best)
		if d > 0 {
			at := bestAt
			qr.EstimatedStart = &at
		}
		q.Waiting = append(q.Waiting, qr)
		slots[0] = bestAt.Add(d)
		ends[best] = append(ends[best], bestAt.Add(d))
		usage[best] += d.Seconds()
	}
	for _, q := range insts {
		out.Installations = append(out.Installations, *q)
	}
	sort.Slice(out.Installations, func(i, j int) bool {
		return out.Installations[i].InstallationID < out.Installations[j].InstallationID
	})
	return out, nil
}
