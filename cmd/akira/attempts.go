package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/akira-bot/akira/jobs/store"
	"github.com/akira-bot/akira/runner"
	attempt "github.com/akira-bot/akira/runner/timeline"
)

// What akira run keeps of its attempts, as the App keeps them with each attempt's log: under the
// runs directory, a directory per run holding run.json (which repository, plan and branch) and,
// per task, each attempt's timeline (<n>.jsonl, one attempt.Event per line) beside its log (<n>.log:
// the agent's output and verification's), secrets masked. `akira status --attempt TASK/N` reads
// them. They are kept for AKIRA_LOG_RETENTION (default 336h), as the App keeps its logs.

// runsDir is where akira run keeps its attempts: AKIRA_RUNS_DIR, else akira/runs in the user's
// cache directory; "" when AKIRA_RUNS_DIR=off, or there is no cache directory.
func runsDir() string {
	switch dir := os.Getenv("AKIRA_RUNS_DIR"); dir {
	case "off":
		return ""
	case "":
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		return filepath.Join(base, "akira", "runs")
	default:
		return dir
	}
}

// logRetention is how long local attempts are kept: AKIRA_LOG_RETENTION, as for the App.
func logRetention() (time.Duration, error) {
	v := os.Getenv("AKIRA_LOG_RETENTION")
	if v == "" {
		return store.DefaultLogRetention, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("AKIRA_LOG_RETENTION: %q is not a positive duration (e.g. 336h)", v)
	}
	return d, nil
}

// runInfo is a local run's run.json.
type runInfo struct {
	RunID   string    `json:"run_id"`
	Repo    string    `json:"repo"`
	Roadmap string    `json:"roadmap"`
	Branch  string    `json:"branch"`
	Base    string    `json:"base"`
	Started time.Time `json:"started"`
	// Status is how the run ended; "" while it runs (or when it died).
	Status string `json:"status,omitempty"`
}

// nameOf makes an id (a task's, a run's: text of the plan and of the user) one safe file name: the
// letters, digits, "-", "_" and "." it holds (a "." not first) as they are, every other byte as %XX.
func nameOf(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	if b.Len() == 0 {
		return "%"
	}
	return b.String()
}

// localRecord keeps the attempts of one run of akira run: a runner.TimelineSink for the timelines,
// and a reporter (in front of the terminal's) for run.json and the attempts' logs.
type localRecord struct {
	dir  string // the runs directory
	next runner.Reporter
	mask *attempt.Masker

	mu     sync.Mutex
	info   runInfo
	warned bool
	// logs are the attempts' logs being written, by task, and the attempts they are of.
	logs     map[string]*strings.Builder
	attempts map[string]int
}

func newLocalRecord(dir string, next runner.Reporter, secrets []string) *localRecord {
	return &localRecord{dir: dir, next: next, mask: attempt.NewMasker(secrets...), logs: map[string]*strings.Builder{},
		attempts: map[string]int{}}
}

func (l *localRecord) runDir(runID string) string { return filepath.Join(l.dir, nameOf(runID)) }

func (l *localRecord) attemptPath(runID, taskID string, n int, ext string) string {
	return filepath.Join(l.runDir(runID), nameOf(taskID), fmt.Sprintf("%d.%s", n, ext))
}

// Record appends ev to its attempt's timeline.
func (l *localRecord) Record(_ context.Context, ev attempt.Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.append(l.attemptPath(ev.RunID, ev.TaskID, ev.Attempt, "jsonl"), append(line, '\n'))
}

func (l *localRecord) append(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("local record: %w", err)
	}
	return f.Close()
}

// Report keeps run.json and the attempts' logs, then passes ev on. What cannot be kept is said
// once, on the log, and never stops the run.
func (l *localRecord) Report(ctx context.Context, ev runner.Event) error {
	if err := l.keep(ev); err != nil {
		l.mu.Lock()
		if !l.warned {
			l.warned = true
			fmt.Fprintln(os.Stderr, "akira: warning: the attempts' logs are not kept: "+err.Error())
		}
		l.mu.Unlock()
	}
	if l.next == nil {
		return nil
	}
	return l.next.Report(ctx, ev)
}

func (l *localRecord) keep(ev runner.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch ev.Type {
	case runner.EventRunStarted:
		l.info = runInfo{RunID: ev.RunID, Repo: ev.Repo, Roadmap: ev.Roadmap, Branch: ev.Branch, Base: ev.Base, Started: ev.Time}
		return l.writeInfo()
	case runner.EventRunFinished:
		if l.info.RunID == "" {
			return nil
		}
		l.info.Status = ev.Message
		var errs []error
		for task, b := range l.logs {
			// An attempt the run ended in the middle of (interrupted, an error).
			fmt.Fprintf(b, "\n==> The run ended during the attempt (%s)\n", ev.Message)
			errs = append(errs, l.writeLog(ev.RunID, task, b))
		}
		clear(l.logs)
		return errors.Join(append(errs, l.writeInfo())...)
	case runner.EventAttemptStarted:
		b := &strings.Builder{}
		l.attempts[ev.TaskID] = ev.Attempt
		l.logs[ev.TaskID] = b
		fmt.Fprintf(b, "==> Run %s, task %s (%s), attempt %d, started %s\n", ev.RunID, ev.TaskID, ev.TaskTitle, ev.Attempt, ev.Time.Format(time.RFC3339))
		if ev.Feedback != "" {
			fmt.Fprintf(b, "\n==> What the agent was told went wrong before\n%s\n", strings.TrimRight(ev.Feedback, "\n"))
		}
	case runner.EventAgentFinished:
		if b := l.logs[ev.TaskID]; b != nil {
			fmt.Fprintf(b, "\n==> Agent (%s)\n%s\n", ev.Duration.Round(time.Millisecond), strings.TrimRight(ev.Output, "\n"))
			if ev.Message != "" {
				fmt.Fprintf(b, "==> The agent failed: %s\n", ev.Message)
			}
		}
	case runner.EventVerifyFinished:
		if b := l.logs[ev.TaskID]; b != nil {
			b.WriteString("\n==> Verification\n")
			for _, v := range ev.Verify {
				fmt.Fprintf(b, "\n$ %s\n(exit %d, %s)\n%s\n", v.Command, v.ExitCode, v.Duration.Round(time.Millisecond), strings.TrimRight(v.Output, "\n"))
			}
		}
	case runner.EventAttemptFailed, runner.EventTaskCheckpointed, runner.EventTaskParked:
		b := l.logs[ev.TaskID]
		if b == nil || ev.Attempt == 0 {
			return nil
		}
		delete(l.logs, ev.TaskID)
		fmt.Fprintf(b, "\n==> %s\n", map[runner.EventType]string{runner.EventAttemptFailed: "Failed: " + ev.Message,
			runner.EventTaskCheckpointed: "Checkpoint " + ev.Commit, runner.EventTaskParked: "Parked: " + ev.Message}[ev.Type])
		return l.writeLog(ev.RunID, ev.TaskID, b)
	}
	return nil
}

// writeLog keeps the log of the task's attempt, masked.
func (l *localRecord) writeLog(runID, taskID string, b *strings.Builder) error {
	path := l.attemptPath(runID, taskID, l.attempts[taskID], "log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	if err := os.WriteFile(path, []byte(l.mask.Mask(b.String())), 0o600); err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	return nil
}

func (l *localRecord) writeInfo() error {
	data, err := json.MarshalIndent(l.info, "", "  ")
	if err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	dir := l.runDir(l.info.RunID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.json"), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("local record: %w", err)
	}
	return nil
}

// pruneRuns removes the runs of dir last written before now-retention.
func pruneRuns(dir string, retention time.Duration, now time.Time) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("local runs: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		run := filepath.Join(dir, e.Name())
		fi, err := os.Stat(filepath.Join(run, "run.json"))
		if err != nil {
			fi, err = e.Info()
		}
		if err != nil || now.Sub(fi.ModTime()) <= retention {
			continue
		}
		if err := os.RemoveAll(run); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// localAttempt is one attempt a local run recorded.
type localAttempt struct {
	info     runInfo
	events   []attempt.Event
	timeline string // the file of its events
	log      string // the file of its log, "" when none was kept
}

// findAttempt reads attempt n of task in the newest run of dir for repo (and branch, when given)
// that has it, or in run runID when given.
func findAttempt(dir, repo, branch, runID, task string, n int) (localAttempt, error) {
	if dir == "" {
		return localAttempt{}, errors.New("akira run keeps no attempts here: AKIRA_RUNS_DIR is off")
	}
	var runs []runInfo
	if runID != "" {
		info, err := readInfo(filepath.Join(dir, nameOf(runID)))
		if err != nil {
			return localAttempt{}, fmt.Errorf("run %s: %w (local runs are kept in %s)", runID, err, dir)
		}
		runs = append(runs, info)
	} else {
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return localAttempt{}, fmt.Errorf("local runs: %w", err)
		}
		for _, e := range entries {
			info, err := readInfo(filepath.Join(dir, e.Name()))
			if err != nil || info.Repo != repo || (branch != "" && info.Branch != branch) {
				continue
			}
			runs = append(runs, info)
		}
		sort.Slice(runs, func(i, j int) bool { return runs[i].Started.After(runs[j].Started) })
	}
	for _, info := range runs {
		l := newLocalRecord(dir, nil, nil)
		a := localAttempt{info: info, timeline: l.attemptPath(info.RunID, task, n, "jsonl")}
		f, err := os.Open(a.timeline)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return localAttempt{}, fmt.Errorf("attempt %s/%d: %w", task, n, err)
		}
		a.events, err = readEvents(f)
		f.Close()
		if err != nil {
			return localAttempt{}, fmt.Errorf("attempt %s/%d of run %s: %w", task, n, info.RunID, err)
		}
		if log := l.attemptPath(info.RunID, task, n, "log"); fileExists(log) {
			a.log = log
		}
		return a, nil
	}
	where := "of " + repo
	if runID != "" {
		where = "of run " + runID
	} else if branch != "" {
		where += " on branch " + branch
	}
	return localAttempt{}, fmt.Errorf("no attempt %d of task %s in the local runs %s (kept in %s for AKIRA_LOG_RETENTION)", n, task, where, dir)
}

func readInfo(runDir string) (runInfo, error) {
	data, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	if err != nil {
		return runInfo{}, err
	}
	var info runInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return runInfo{}, fmt.Errorf("run.json: %w", err)
	}
	return info, nil
}

// readEvents reads a timeline's lines; a line of a later schema's kind is kept as it is read.
func readEvents(r io.Reader) ([]attempt.Event, error) {
	var out []attempt.Event
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		var ev attempt.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// localSecrets are what akira run masks in the attempts it keeps: the model keys it holds and the
// tokens git may push with.
func localSecrets(modelKeys []string) []string {
	out := append([]string{}, modelKeys...)
	for _, n := range []string{"AKIRA_GITHUB_TOKEN", "GITHUB_TOKEN"} {
		if v := os.Getenv(n); v != "" {
			out = append(out, v)
		}
	}
	return out
}
