package runner

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
)

const threeTasks = `# Test roadmap

## Phase 1: Basics

- [ ] T1: Create one
  - verify: ` + "`test -f T1.txt`" + `
- [ ] T2: Create two (depends: T1)
  - verify: ` + "`test -f T2.txt`" + `
- [ ] T3: Create three
  - verify: ` + "`test -f T3.txt`" + `
`

// fixture is a bare remote holding a roadmap, a user's working clone of it (which no run may touch),
// and a directory outside both where scripted agents keep their logs.
type fixture struct {
	repo     gittest.Repo
	logs     string
	workDir  string
	snapshot string
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	f := &fixture{repo: gittest.New(t, files), logs: t.TempDir(), workDir: t.TempDir()}
	// Uncommitted work in the user's clone: a run must leave it exactly as it is.
	gittest.WriteFiles(t, f.repo.Work, map[string]string{"scratch.txt": "user's own notes\n"})
	f.snapshot = gittest.Snapshot(t, f.repo.Work)
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		if got := gittest.Snapshot(t, f.repo.Work); got != f.snapshot {
			t.Errorf("the user's working clone changed:\nbefore:\n%s\nafter:\n%s", f.snapshot, got)
		}
		if left, _ := os.ReadDir(f.workDir); len(left) != 0 {
			t.Errorf("workspace not removed: %v", left)
		}
	})
	return f
}

// agent is a scripted shell agent; $LOG is the fixture's log directory.
func (f *fixture) agent(script string) *agent.Exec {
	return &agent.Exec{Command: script, Env: []string{"LOG=" + f.logs}}
}

func (f *fixture) run(t *testing.T, opts Options) (Outcome, *recorder, error) {
	t.Helper()
	rec := &recorder{}
	if opts.Repo == "" {
		opts.Repo = f.repo.Remote
	}
	opts.WorkDir = f.workDir
	if opts.Reporter == nil {
		opts.Reporter = rec
	} else {
		opts.Reporter = reporters(rec, opts.Reporter)
	}
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	out, err := Run(context.Background(), opts)
	return out, rec, err
}

// log lists the commits of a branch of the remote that are not on main, oldest first, as
// "subject|trailers".
func (f *fixture) log(t *testing.T, branch string) []string {
	t.Helper()
	if _, code := gittest.TryGit(t, f.repo.Remote, "rev-parse", "--verify", "-q", "refs/heads/"+branch); code != 0 {
		return nil
	}
	out := gittest.Git(t, f.repo.Remote, "log", "--reverse", "--format=%s|%(trailers:key=Akira-Task,valueonly,separator=%x2C)", "main.."+branch)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// calls reads the agent invocation log written by scripts as "task attempt" lines.
func (f *fixture) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(f.logs, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(data)), " ", ":"))
}

// logCall is the script prefix that records each call in $LOG/calls.
const logCall = `echo "$AKIRA_TASK_ID $AKIRA_ATTEMPT" >> "$LOG/calls"; `

type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) Report(_ context.Context, ev Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

// of returns the events of a type, optionally for one task.
func (r *recorder) of(typ EventType, task string) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Event
	for _, ev := range r.events {
		if ev.Type == typ && (task == "" || ev.TaskID == task) {
			out = append(out, ev)
		}
	}
	return out
}

func statuses(out Outcome) map[string]TaskStatus {
	m := map[string]TaskStatus{}
	for _, r := range out.Tasks {
		m[r.ID] = r.Status
	}
	return m
}

func wantStatuses(t *testing.T, out Outcome, want map[string]TaskStatus) {
	t.Helper()
	got := statuses(out)
	for id, s := range want {
		if got[id] != s {
			t.Errorf("task %s: status %q, want %q (all: %v)", id, got[id], s, got)
		}
	}
}

func wantCalls(t *testing.T, f *fixture, want ...string) {
	t.Helper()
	if got := f.calls(t); !slices.Equal(got, want) {
		t.Fatalf("agent calls = %v, want %v", got, want)
	}
}

// reporters fans events out to every non-nil reporter in order. Each reporter sees every event even
// when an earlier one failed; the errors are joined.
func reporters(rs ...Reporter) Reporter {
	var live []Reporter
	for _, r := range rs {
		if r != nil {
			live = append(live, r)
		}
	}
	return ReporterFunc(func(ctx context.Context, ev Event) error {
		var errs []error
		for _, r := range live {
			if err := r.Report(ctx, ev); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
}
