package store

import (
	"strconv"
	"strings"
)

// repoKey is lower-case because GitHub owner and repository names are case-insensitive.
func repoKey(owner, repo string) string { return strings.ToLower(owner + "/" + repo) }

func (s *conn) runKey(id string) string { return s.prefix + "run:" + id }

func (s *conn) indexKey(owner, repo string, number int) string {
	return s.prefix + "runidx:" + repoKey(owner, repo) + "#" + strconv.Itoa(number)
}

// runningKey is the set of runs marked running: a job holds their branch lock, or its worker died.
func (s *conn) runningKey() string { return s.prefix + "running" }

func (s *conn) branchKey(owner, repo, branch string) string {
	return s.prefix + "branchrun:" + repoKey(owner, repo) + ":" + branch
}

// waitingKey is the set of runs waiting for their pull request's CI.
func (s *conn) waitingKey() string { return s.prefix + "waitingci" }

// outboxKey is the sorted set of runs with effects not yet performed, by when they were left.
func (s *conn) outboxKey() string { return s.prefix + "outbox" }

// tasksKey holds a run's tasks. It is outside the run:* pattern, which names records only.
func (s *conn) tasksKey(id string) string { return s.prefix + "runtasks:" + id }
