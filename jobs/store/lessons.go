package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/lessons"
)

// RepoLessons is one repository's memory in Redis: a hash of lessons by id under a key that names
// the installation and the repository, so no other repository's runs, nor the same repository
// under another installation, ever read them.
type RepoLessons struct {
	s   *Memory
	key string
}

// Lessons returns the memory of a repository of an installation.
func (s *Memory) Lessons(installationID int64, owner, repo string) *RepoLessons {
	return &RepoLessons{s: s, key: s.prefix + "lessons:" + strconv.FormatInt(installationID, 10) + ":" + repoKey(owner, repo)}
}

// List returns the lessons, oldest first.
func (r *RepoLessons) List(ctx context.Context) ([]lessons.Lesson, error) {
	vals, err := r.s.rdb.HGetAll(ctx, r.key).Result()
	if err != nil {
		return nil, fmt.Errorf("jobs: lessons: %w", err)
	}
	out := make([]lessons.Lesson, 0, len(vals))
	for _, v := range vals {
		var l lessons.Lesson
		if json.Unmarshal([]byte(v), &l) == nil {
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Add keeps a lesson; beyond lessons.MaxLessons the oldest go.
func (r *RepoLessons) Add(ctx context.Context, l lessons.Lesson) (lessons.Lesson, error) {
	l = lessons.Normalize(l, time.Now())
	data, err := json.Marshal(l)
	if err != nil {
		return lessons.Lesson{}, fmt.Errorf("jobs: lessons: %w", err)
	}
	if err := r.s.rdb.HSet(ctx, r.key, l.ID, data).Err(); err != nil {
		return lessons.Lesson{}, fmt.Errorf("jobs: lessons: %w", err)
	}
	if n, err := r.s.rdb.HLen(ctx, r.key).Result(); err == nil && n > lessons.MaxLessons {
		all, err := r.List(ctx)
		if err == nil && len(all) > lessons.MaxLessons {
			for _, old := range all[:len(all)-lessons.MaxLessons] {
				r.s.rdb.HDel(ctx, r.key, old.ID)
			}
		}
	}
	return l, nil
}

// Forget removes a lesson, reporting whether there was one.
func (r *RepoLessons) Forget(ctx context.Context, id string) (bool, error) {
	n, err := r.s.rdb.HDel(ctx, r.key, id).Result()
	if err != nil {
		return false, fmt.Errorf("jobs: lessons: %w", err)
	}
	return n > 0, nil
}

// LessonInstallations lists the installations that keep lessons for a repository (operators name a
// repository; its installation id is Akira's business).
func (s *Memory) LessonInstallations(ctx context.Context, owner, repo string) ([]int64, error) {
	suffix := ":" + repoKey(owner, repo)
	var ids []int64
	iter := s.rdb.Scan(ctx, 0, s.prefix+"lessons:*"+suffix, 100).Iterator()
	for iter.Next(ctx) {
		mid := strings.TrimSuffix(strings.TrimPrefix(iter.Val(), s.prefix+"lessons:"), suffix)
		if id, err := strconv.ParseInt(mid, 10, 64); err == nil && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	if err := iter.Err(); err != nil {
		return nil, fmt.Errorf("jobs: lessons: %w", err)
	}
	slices.Sort(ids)
	return ids, nil
}
