package llm

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
)

const (
	testModel = "test-model"
	testKey   = "sk-test-SECRET-0123456789"
)

func newFake(t *testing.T, kind string, script ...llmtest.Turn) *llmtest.Server {
	t.Helper()
	return llmtest.New(t, kind, testModel, testKey, script...)
}

// newTestAgent builds an agent against f whose retry waits are recorded instead of taken.
func newTestAgent(t *testing.T, f *llmtest.Server, mutate func(*Config)) (*llmAgent, *waits, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg := Config{
		Provider: f.Kind(), Model: testModel, BaseURL: f.BaseURL(), APIKey: testKey,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	ag, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	a := ag.(*llmAgent)
	w := &waits{}
	a.http.retry.baseDelay = 100 * time.Millisecond
	a.http.retry.sleep = func(ctx context.Context, d time.Duration) error {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.d = append(w.d, d)
		return ctx.Err()
	}
	return a, w, logs
}

type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newRepo makes a git repository with files (path → content) committed, and returns its directory.
func newRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=Test", "-c", "user.email=test@example.com", "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}
