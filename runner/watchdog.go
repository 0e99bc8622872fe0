package runner

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"sync/atomic"
	"time"
)

// errStalled is the cause of an agent's context when the stall watchdog ended it.
var errStalled = errors.New("runner: agent stalled")

// stallWatchdog ends an agent that shows no sign of life for its timeout: no output (Activity) and no
// change in the work tree (a file written, created or removed). A hung agent is then noticed in
// minutes rather than at the agent timeout.
type stallWatchdog struct {
	dir     string
	timeout time.Duration
	last    atomic.Int64 // unix nanoseconds of the last sign of life
}

func newStallWatchdog(dir string, timeout time.Duration) *stallWatchdog {
	d := &stallWatchdog{dir: dir, timeout: timeout}
	d.alive()
	return d
}

// alive records a sign of life.
func (d *stallWatchdog) alive() { d.last.Store(time.Now().UnixNano()) }

// watch checks every tenth of the timeout (at most every 30 s, at least every 50 ms) until ctx ends,
// and cancels with errStalled once the agent has been silent for the timeout.
func (d *stallWatchdog) watch(ctx context.Context, cancel context.CancelCauseFunc) {
	if d.timeout <= 0 {
		return
	}
	tick := min(max(d.timeout/10, 50*time.Millisecond), 30*time.Second)
	t := time.NewTicker(tick)
	defer t.Stop()
	// The first signature is taken at the first tick, not as the agent starts: a walk of the whole
	// work tree per attempt cost every task in proportion to the files the repository (and the run)
	// had, and an agent done within a tick never needed it. Until then the start counts as the
	// last sign of life, which the timeout (several ticks) measures from anyway.
	var sig [3]int64
	first := true
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s := treeSignature(d.dir)
		if first {
			sig, first = s, false
		} else if s != sig {
			sig = s
			d.alive()
			continue
		}
		if time.Since(time.Unix(0, d.last.Load())) >= d.timeout {
			cancel(errStalled)
			return
		}
	}
}

// treeSignature changes when a file of the work tree (outside .git) is written, created or removed:
// the count of entries, the total size and the latest modification time.
func treeSignature(dir string) [3]int64 {
	var n, size, latest int64
	_ = filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && e.Name() == ".git" {
			return filepath.SkipDir
		}
		info, err := e.Info()
		if err != nil {
			return nil
		}
		n++
		size += info.Size()
		latest = max(latest, info.ModTime().UnixNano())
		return nil
	})
	return [3]int64{n, size, latest}
}
