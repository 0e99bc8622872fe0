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

	"github.com/akira-bot/akira/jobs/lifecycle"
)

// The run index is a sorted set of every run id Redis holds, scored by the run's creation time in
// microseconds: the runs list reads it a page at a time instead of scanning every key of the
// database. Creation time, not update time, so that a cursor stays valid while runs on the pages
// already read keep changing (an update-time order would move a run from page 3 to page 1 under a
// reader's feet). Create and Update add the run (Update too, so a run created before the index
// existed joins it at its next write); ids whose state has expired are removed as a listing meets
// them.
func (s *Listing) runsIndexKey() string { return s.prefix + "runs" }

// runsIndexedKey marks that runs stored before the index existed have been added to it (once per
// database: a flushed Redis loses the mark with the runs).
func (s *Listing) runsIndexedKey() string { return s.prefix + "runs:indexed" }

func indexScore(created time.Time) float64 { return float64(created.UnixMicro()) }

// indexRun adds the run to the index in p (idempotent).
func (s *Listing) indexRun(ctx context.Context, p redis.Pipeliner, r *lifecycle.Run) {
	p.ZAdd(ctx, s.runsIndexKey(), redis.Z{Score: indexScore(r.CreatedAt), Member: r.ID})
}

// RunFilter selects runs: by repository ("owner/name", any case) and by status; empty matches all.
type RunFilter struct {
	Repo   string
	Status []lifecycle.RunStatus
	Limit  int // 0: 100
	// Allow, when set, hides the runs of the repositories ("owner/name") it refuses, before the limit
	// counts them (a token limited to some repositories gets full pages of its own runs).
	Allow func(repo string) bool
	// Cursor continues a listing where the page that returned it as Next ended; empty starts at the
	// newest run.
	Cursor string
}

// RunPage is one page of runs, newest first. Next is the cursor of the following page, empty on the
// last one.
type RunPage struct {
	Runs []*lifecycle.Run
	Next string
}

// ErrBadCursor is returned for a cursor that no page returned.
var ErrBadCursor = errors.New("jobs: cursor is not one a page of runs returned")

// cursor names the position after a run: its score and its id (runs created in the same
// microsecond are ordered by id, as Redis orders equal scores).
func cursorOf(score float64, id string) string {
	return strconv.FormatInt(int64(score), 36) + "." + id
}

func parseCursor(c string) (score float64, id string, err error) {
	n, id, ok := strings.Cut(c, ".")
	v, perr := strconv.ParseInt(n, 36, 64)
	if !ok || perr != nil || id == "" || v < 0 {
		return 0, "", fmt.Errorf("%w: %q", ErrBadCursor, c)
	}
	return float64(v), id, nil
}

// runsBatch is how many index entries a listing reads at once.
const runsBatch = 200

// Runs lists the runs Redis holds that match f, newest first, at most f.Limit of them.
func (s *Listing) Runs(ctx context.Context, f RunFilter) ([]*lifecycle.Run, error) {
	p, err := s.RunsPage(ctx, f)
	return p.Runs, err
}

// RunsPage lists one page of the runs that match f, newest first, from f.Cursor on. It reads the
// index in batches, so a page costs what the runs it passes over cost, whatever the database holds.
func (s *Listing) RunsPage(ctx context.Context, f RunFilter) (RunPage, error) {
	page, err := s.runsPage(ctx, f)
	if err != nil {
		return page, err
	}
	// The records came without their tasks: one round trip reads the tasks of the whole page.
	cmds := make([]*redis.MapStringStringCmd, len(page.Runs))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range page.Runs {
			if r.Tasks == nil {
				cmds[i] = p.HGetAll(ctx, s.tasksKey(r.ID))
			}
		}
		return nil
	}); err != nil {
		return RunPage{}, fmt.Errorf("jobs: list runs: %w", err)
	}
	for i, c := range cmds {
		if c == nil {
			continue
		}
		if page.Runs[i].Tasks, err = decodeTasks(page.Runs[i].ID, c.Val()); err != nil {
			return RunPage{}, err
		}
	}
	return page, nil
}

func (s *Listing) runsPage(ctx context.Context, f RunFilter) (RunPage, error) {
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	if err := s.backfillIndex(ctx); err != nil {
		return RunPage{}, err
	}
	top := "+inf"
	var (
		afterScore float64
		afterID    string
	)
	if f.Cursor != "" {
		var err error
		if afterScore, afterID, err = parseCursor(f.Cursor); err != nil {
			return RunPage{}, err
		}
		// Inclusive: runs of the same microsecond after the cursor's id are on this page.
		top = strconv.FormatFloat(afterScore, 'f', -1, 64)
	}
	var (
		page  RunPage
		stale []any
	)
	defer func() {
		if len(stale) > 0 {
			// Best effort: a later listing removes what this one could not.
			_ = s.rdb.ZRem(context.WithoutCancel(ctx), s.runsIndexKey(), stale...).Err()
		}
	}()
	for offset := int64(0); ; {
		zs, err := s.rdb.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: s.runsIndexKey(), Start: top, Stop: "-inf",
			ByScore: true, Rev: true, Offset: offset, Count: runsBatch}).Result()
		if err != nil {
			return RunPage{}, fmt.Errorf("jobs: list runs: %w", err)
		}
		if len(zs) == 0 {
			return page, nil
		}
		offset += int64(len(zs))
		exhausted := len(zs) < runsBatch // a short batch is the end of the index
		if f.Cursor != "" {
			zs = slices.DeleteFunc(zs, func(z redis.Z) bool { return z.Score == afterScore && z.Member.(string) >= afterID })
			if len(zs) == 0 {
				continue
			}
		}
		keys := make([]string, len(zs))
		for i, z := range zs {
			keys[i] = s.runKey(z.Member.(string))
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return RunPage{}, fmt.Errorf("jobs: list runs: %w", err)
		}
		for i, v := range vals {
			str, ok := v.(string)
			if !ok {
				stale = append(stale, zs[i].Member) // its state expired
				continue
			}
			var r lifecycle.Run
			if json.Unmarshal([]byte(str), &r) != nil || !f.matches(&r) {
				continue
			}
			page.Runs = append(page.Runs, &r)
			if len(page.Runs) == limit {
				// A next page only when the index goes on (its runs may still all be filtered out).
				if i < len(vals)-1 || !exhausted {
					page.Next = cursorOf(zs[i].Score, zs[i].Member.(string))
				}
				return page, nil
			}
		}
		if exhausted {
			return page, nil
		}
	}
}

func (f RunFilter) matches(r *lifecycle.Run) bool {
	repo := r.Owner + "/" + r.Repo
	switch {
	case f.Repo != "" && !strings.EqualFold(repo, f.Repo):
		return false
	case len(f.Status) > 0 && !slices.Contains(f.Status, r.Status):
		return false
	case f.Allow != nil && !f.Allow(repo):
		return false
	}
	return true
}

// backfillIndex adds the runs stored before the index existed, once: the only scan of run keys left.
func (s *Listing) backfillIndex(ctx context.Context) error {
	n, err := s.rdb.Exists(ctx, s.runsIndexedKey()).Result()
	if err != nil {
		return fmt.Errorf("jobs: list runs: %w", err)
	}
	if n > 0 {
		return nil
	}
	iter := s.rdb.Scan(ctx, 0, s.prefix+"run:*", 500).Iterator()
	var keys []string
	flush := func() error {
		if len(keys) == 0 {
			return nil
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		var zs []redis.Z
		for _, v := range vals {
			var r lifecycle.Run
			if str, ok := v.(string); ok && json.Unmarshal([]byte(str), &r) == nil && r.ID != "" {
				zs = append(zs, redis.Z{Score: indexScore(r.CreatedAt), Member: r.ID})
			}
		}
		keys = keys[:0]
		if len(zs) == 0 {
			return nil
		}
		return s.rdb.ZAdd(ctx, s.runsIndexKey(), zs...).Err()
	}
	for iter.Next(ctx) {
		if keys = append(keys, iter.Val()); len(keys) == runsBatch {
			if err := flush(); err != nil {
				return fmt.Errorf("jobs: index runs: %w", err)
			}
		}
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("jobs: index runs: %w", err)
	}
	if err := flush(); err != nil {
		return fmt.Errorf("jobs: index runs: %w", err)
	}
	if err := s.rdb.Set(ctx, s.runsIndexedKey(), "1", 0).Err(); err != nil {
		return fmt.Errorf("jobs: index runs: %w", err)
	}
	return nil
}
