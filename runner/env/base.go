package env

import (
	"context"
	"sync"
)

// BaseResult is what the base-branch health check found for one base commit.
type BaseResult struct {
	Passed bool `json:"passed"`
	// Command is the first repository-wide verify command that failed; Tail the end of its output.
	Command  string `json:"command,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	Tail     string `json:"tail,omitempty"`
}

// BaseMemory remembers the health check's result per repository and base commit, so that the check
// runs once per base commit and not once per run. Key is the caller's (repository + commit).
type BaseMemory interface {
	Base(ctx context.Context, key string) (BaseResult, bool, error)
	RememberBase(ctx context.Context, key string, r BaseResult) error
}

// MemoryBase is a BaseMemory in this process's memory (akira run).
type MemoryBase struct {
	mu sync.Mutex
	m  map[string]BaseResult
}

// Base returns the remembered result of key.
func (m *MemoryBase) Base(_ context.Context, key string) (BaseResult, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.m[key]
	return r, ok, nil
}

// RememberBase keeps the result of key.
func (m *MemoryBase) RememberBase(_ context.Context, key string, r BaseResult) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]BaseResult{}
	}
	m.m[key] = r
	return nil
}
