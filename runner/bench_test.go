package runner

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/proc"
)

// writeAgent is the cheapest possible agent: it writes one file, in process.
type writeAgent struct{}

func (writeAgent) Run(_ context.Context, req agent.Request) (agent.Result, error) {
	start := time.Now()
	err := os.WriteFile(filepath.Join(req.Workspace, "task-"+req.TaskID+".txt"), []byte(req.TaskTitle+"\n"), 0o644)
	return agent.Result{Duration: time.Since(start)}, err
}

func benchRoadmap(n int) string {
	var b strings.Builder
	b.WriteString("# Benchmark\n\n## Phase 1\n\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "- [ ] B%d: Task number %d\n", i, i)
	}
	return b.String()
}

// gitFloor does by hand what a checkpoint amounts to, for n tasks: a clone, then per task the same
// change (one new file and the ticked box) with plain git add, git commit and git push.
func gitFloor(tb testing.TB, remote string, n int) time.Duration {
	tb.Helper()
	ctx := context.Background()
	env := proc.Environ(nil, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Akira", "GIT_AUTHOR_EMAIL=akira@users.noreply.github.com",
		"GIT_COMMITTER_NAME=Akira", "GIT_COMMITTER_EMAIL=akira@users.noreply.github.com")
	root := tb.TempDir()
	dir := filepath.Join(root, "clone")
	git := func(dir string, args ...string) {
		res, err := proc.Run(ctx, proc.Cmd{Args: append([]string{"git"}, args...), Dir: dir, Env: env})
		if err != nil || res.ExitCode != 0 {
			tb.Fatalf("git %v: %v %s", args, err, res.Output)
		}
	}
	start := time.Now()
	git(root, "clone", "-q", remote, dir)
	git(dir, "checkout", "-q", "-b", "floor")
	roadmapFile := filepath.Join(dir, "ROADMAP.md")
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("B%d", i)
		if err := os.WriteFile(filepath.Join(dir, "task-"+id+".txt"), []byte("Task\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
		data, err := os.ReadFile(roadmapFile)
		if err != nil {
			tb.Fatal(err)
		}
		data = bytes.Replace(data, []byte("- [ ] "+id+":"), []byte("- [x] "+id+":"), 1)
		if err := os.WriteFile(roadmapFile, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		git(dir, "add", "--all")
		git(dir, "commit", "-q", "-m", "akira: "+id+"\n\nAkira-Task: "+id)
		git(dir, "push", "-q", "origin", "refs/heads/floor:refs/heads/floor")
	}
	return time.Since(start)
}

// BenchmarkTaskOverhead measures the engine's own cost per task — clone, prompt, verify plan, one
// `true` verification, tick, checkpoint commit, push, events — with an agent that only writes a
// file, next to the floor of plain git doing the same change (git add, git commit, git push, plus one
// clone) in the same run. ns/op is per task; x-floor is engine time over floor time.
func BenchmarkTaskOverhead(b *testing.B) {
	n := b.N
	b.StopTimer()
	floorRepo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
	floor := gitFloor(b, floorRepo.Remote, n)
	repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(n)})
	opts := Options{
		Repo: repo.Remote, Agent: writeAgent{}, Verify: []string{"true"}, WorkDir: b.TempDir(),
		Reporter: NewJSONReporter(io.Discard), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	b.StartTimer()
	out, err := Run(context.Background(), opts)
	b.StopTimer()
	if err != nil || out.Status != StatusSucceeded {
		b.Fatalf("Run: %v (%s)", err, out.Status)
	}
	if len(out.Tasks) != n || out.Tasks[n-1].Status != TaskDone {
		b.Fatalf("not every task is done: %+v", out.Tasks[n-1])
	}
	b.ReportMetric(float64(floor.Nanoseconds())/float64(n), "floor-ns/task")
	b.ReportMetric(float64(b.Elapsed())/float64(floor), "x-floor")
}

// BenchmarkGitFloor is the floor alone: per op, one change committed and pushed with plain git
// (plus the clone, amortised).
func BenchmarkGitFloor(b *testing.B) {
	b.StopTimer()
	repo := gittest.New(b, map[string]string{"ROADMAP.md": benchRoadmap(b.N)})
	b.StartTimer()
	gitFloor(b, repo.Remote, b.N)
}
