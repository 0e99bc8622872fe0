package runner

import (
	"context"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/sandbox"
)

// setupSnapshot is the setup snapshot a run may restore in place of its setup commands, or save
// after they pass.
type setupSnapshot struct {
	scope, key, lockKey string
	// found is the snapshot to restore, nil when there is none to use.
	found *env.Snapshot
}

// planSnapshot keys the snapshot of this run's setup and looks it up; nil when snapshots are off
// (no cache root, cache: off, snapshot: off) or the key cannot be made. It must run before the
// dependency cache is opened.
func (e *engine) planSnapshot(setup config.Setup, cacheMode string, cmds []string, network sandbox.Network) *setupSnapshot {
	if e.o.DepCaches == nil || e.o.DepCaches.Root == "" || cacheMode == "off" || setup.Snapshot == config.SnapshotOff {
		return nil
	}
	key, lockKey, err := env.SnapshotKey(e.ws.Dir, env.SnapshotInputs{Commands: cmds, Network: string(network)})
	if err != nil {
		e.o.Logger.Warn("runner: no setup snapshot", "err", err)
		return nil
	}
	s := &setupSnapshot{scope: e.cacheScope(), key: key, lockKey: lockKey}
	found, why, err := e.o.DepCaches.LookupSnapshot(s.scope, key, time.Duration(setup.Snapshot))
	switch {
	case err != nil:
		e.o.Logger.Warn("runner: setup snapshot not looked up", "err", err)
	case found == nil:
		e.o.Logger.Info("runner: setup runs: "+why, "snapshot", key)
	}
	s.found = found
	return s
}

// restoreSnapshot puts the snapshot's files in the work tree in place of running setup. A snapshot
// that cannot be restored is logged and undone, and setup runs: a bad snapshot never fails a run.
func (e *engine) restoreSnapshot(ctx context.Context, s *setupSnapshot) (env.Result, bool) {
	info, err := s.found.Restore(ctx, e.ws.Dir)
	if err != nil {
		e.o.Logger.Warn("runner: setup snapshot not restored, setup runs instead", "snapshot", s.key, "err", err)
		// The clone is fresh: whatever is untracked or ignored now came from the restore.
		if _, cerr := e.ws.Git(ctx, "clean", "-ffdxq"); cerr != nil {
			e.o.Logger.Warn("runner: what the snapshot restore left not cleaned", "err", cerr)
		}
		if rerr := e.o.DepCaches.RemoveSnapshot(s.scope, s.key); rerr != nil {
			e.o.Logger.Warn("runner: setup snapshot not removed", "err", rerr)
		}
		return env.Result{}, false
	}
	e.o.Logger.Info("runner: setup restored from its snapshot", "snapshot", s.key, "files", info.Files, "bytes", info.Bytes)
	return env.Result{Snapshot: &info}, true
}

// saveSnapshot keeps what the setup that just ran added to the work tree, when it passed and changed
// no tracked file; nil when nothing was saved. A setup that failed removes the snapshot of the same
// inputs: something the key does not see has changed.
func (e *engine) saveSnapshot(ctx context.Context, s *setupSnapshot, res env.Result) *env.SnapshotInfo {
	if res.Failed() != nil {
		if err := e.o.DepCaches.RemoveSnapshot(s.scope, s.key); err != nil {
			e.o.Logger.Warn("runner: setup snapshot not removed", "err", err)
		}
		return nil
	}
	out, err := e.ws.Git(ctx, "status", "--porcelain=v1", "-z", "--ignored=traditional", "--untracked-files=normal")
	if err != nil {
		e.o.Logger.Warn("runner: no setup snapshot", "err", err)
		return nil
	}
	var paths, changed []string
	fields := strings.Split(out, "\x00")
	for i := 0; i < len(fields); i++ {
		f := fields[i]
		switch {
		case f == "":
		case strings.HasPrefix(f, "?? "), strings.HasPrefix(f, "!! "):
			paths = append(paths, f[3:])
		default:
			// A tracked file setup changed (Git's output is trimmed: the first status may have lost
			// its leading space). A rename's second field is its old name.
			changed = append(changed, strings.TrimSpace(f))
			if len(f) > 0 && (f[0] == 'R' || f[0] == 'C') {
				i++
			}
		}
	}
	if len(changed) > 0 {
		e.o.Logger.Info("runner: no setup snapshot: setup changed tracked files", "changed", clipList(changed, 10))
		return nil
	}
	info, err := e.o.DepCaches.SaveSnapshot(ctx, s.scope, s.key, e.ws.Dir, paths, env.SnapshotOptions{LockKey: s.lockKey})
	if err != nil {
		e.o.Logger.Warn("runner: no setup snapshot", "err", err)
		return nil
	}
	e.o.Logger.Info("runner: setup snapshot saved", "snapshot", s.key, "files", info.Files, "bytes", info.Bytes)
	return &info
}
