package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/verify"
)

var (
	// ErrSetupFailed wraps a setup command that failed or hit a limit: the run stops before any
	// agent call.
	ErrSetupFailed = errors.New("setup failed")
	// ErrRedBase wraps a base branch whose repository-wide verification fails before any change.
	ErrRedBase = errors.New("the base branch is red")
)

// envError is a run stopped by its environment: its message is for the repository's people as it is.
type envError struct {
	kind error
	msg  string
}

func (e envError) Error() string        { return e.msg }
func (e envError) Is(target error) bool { return target == e.kind }

// prepareEnv runs the repository's setup, starts its services and runs the base-branch health check,
// in that order, before the first task. Any of them failing ends the run before any agent call.
func (e *engine) prepareEnv(ctx context.Context, repo config.Repo) error {
	if err := e.setup(ctx, repo.Setup, repo.Cache, repo.Services); err != nil {
		return err
	}
	return e.checkBase(ctx)
}

// setupNetwork is what setup commands may reach: what the repository asks for, never more than
// verification may reach.
func setupNetwork(asked string, verifyNet sandbox.Network) sandbox.Network {
	rank := map[sandbox.Network]int{sandbox.NetNone: 0, sandbox.NetAllowlist: 1, sandbox.NetAllow: 2}
	want := sandbox.Network(asked)
	if _, ok := rank[want]; !ok || asked == "" {
		return verifyNet
	}
	if rank[want] < rank[verifyNet] {
		return want
	}
	return verifyNet
}

func (e *engine) setup(ctx context.Context, setup config.Setup, cacheMode string, services config.Services) error {
	cmds, detected, proposed := setup.Commands, "", env.Proposal{}
	if len(cmds) == 0 {
		p := env.Detect(e.ws.Dir)
		if p.Install != "" && e.o.AutoSetup {
			cmds, detected = []string{p.Install}, p.Reason
		} else {
			// Only proposed: the summary says what would run, and how to have it.
			proposed = p
		}
	}
	var res env.Result
	var cache *env.Cache
	var keep []string // what this run's prune must not remove
	if len(cmds) > 0 {
		home, err := e.ws.Scratch("home-setup")
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		timeout := time.Duration(setup.Timeout)
		if timeout <= 0 {
			timeout = e.o.VerifyTimeout
		}
		network := setupNetwork(setup.Network, e.o.Sandbox.VerifyNetwork)
		// Looked up before the cache is opened: a snapshot is only good with the cache it was made with.
		// The snapshot's own work (key, lookup, restore or save) counts in setup's time.
		snapStart := time.Now()
		snap := e.planSnapshot(setup, cacheMode, cmds, network)
		planned := time.Since(snapStart)
		if cache, err = e.openCache(cacheMode); err != nil {
			return err
		}
		restored := false
		if snap != nil && snap.found != nil {
			res, restored = e.restoreSnapshot(ctx, snap)
			if restored {
				res.Duration = time.Since(snapStart)
				res.Log = fmt.Sprintf("[akira: %s, in place of: %s]\n", setupMessage(res), strings.Join(cmds, " && "))
			}
		}
		if !restored {
			box, sess, err := egressPolicy(e.o.Sandbox, network, e.ws.Dir, e.ws.GitDir(), home, nil, 0, nil)
			if err != nil {
				return err
			}
			setupEnv := e.verifyEnv
			if cache != nil {
				box.ReadWrite = append(box.ReadWrite, cache.Dir)
				setupEnv = withEnv(e.verifyEnv, cache.Env(true))
			}
			res, err = env.Setup(ctx, e.ws.Dir, cmds, env.Options{Env: setupEnv, Timeout: timeout, Sandbox: box, Stream: e.o.Output})
			if sess != nil {
				sess.Close()
			}
			if err != nil {
				return fmt.Errorf("runner: %w", err)
			}
			if snap != nil {
				// Written now, from what setup's sandbox left and before any agent call: nothing an
				// agent or a verification does can reach a snapshot.
				saveStart := time.Now()
				res.Snapshot = e.saveSnapshot(ctx, snap, res)
				res.Duration += planned + time.Since(saveStart)
			}
		}
		res.Detected = detected
		if snap != nil {
			keep = append(keep, env.SnapshotPrefix+snap.key)
		}
	}
	if res.Failed() == nil && len(services) > 0 {
		steps, err := e.startServices(ctx, services)
		res.Steps = append(res.Steps, steps...)
		for _, st := range steps {
			res.Duration += st.Duration
		}
		if err != nil {
			return err
		}
	}
	if len(res.Steps) == 0 && res.Snapshot == nil {
		if proposed.Install == "" {
			return nil
		}
		res = env.Result{Detected: proposed.Reason, Proposed: proposed.Install}
		return e.emit(ctx, Event{Type: EventSetupFinished, Setup: &res, Message: setupMessage(res)})
	}
	if err := e.emit(ctx, Event{Type: EventSetupFinished, Setup: &res, Duration: res.Duration, Message: setupMessage(res)}); err != nil {
		return err
	}
	if f := res.Failed(); f != nil {
		return envError{ErrSetupFailed, "setup failed: " + setupMessage(res)}
	}
	if cache != nil {
		// The agent and verification see the cache setup filled: read-only unless the repository
		// said otherwise, so that an attempt cannot poison what later runs install from.
		write := cacheMode == "read-write"
		if write {
			e.o.Sandbox.ReadWrite = append(slices.Clip(e.o.Sandbox.ReadWrite), cache.Dir)
		} else {
			e.o.Sandbox.ReadOnly = append(slices.Clip(e.o.Sandbox.ReadOnly), cache.Dir)
		}
		e.verifyEnv = withEnv(e.verifyEnv, cache.Env(write))
		// The agent's own installs and builds find the same cache (and cannot write it, read-only).
		e.agentEnv = withEnv(e.agentEnv, cache.Env(write))
		keep = append(keep, cache.Key)
	}
	if len(keep) > 0 {
		// A repository without a lock file has no dependency cache but may have a snapshot.
		if removed, err := e.o.DepCaches.PruneScope(e.cacheScope(), 0, keep...); err != nil {
			e.o.Logger.Warn("runner: dependency caches not pruned", "err", err)
		} else if len(removed) > 0 {
			e.o.Logger.Info("runner: least recently used dependency caches removed", "count", len(removed))
		}
	}
	if len(cmds) > 0 {
		excluded, err := e.ws.ExcludeUntracked(ctx)
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		if len(excluded) > 0 {
			e.o.Logger.Info("runner: what setup left untracked stays out of checkpoints", "paths", clipList(excluded, 20))
		}
	}
	return nil
}

// serviceUID is the user a service runs as inside its sandbox: never root, which PostgreSQL refuses.
const serviceUID = 1000

// startServices starts the repository's services for the run, each in a sandbox of its own under
// the verification's limits, and gives verification and the agent their addresses; engine.run stops
// them at the end.
func (e *engine) startServices(ctx context.Context, services config.Services) ([]env.Step, error) {
	if e.o.services != nil {
		// A task of a parallel wave: the run's services are up, its sandbox config already names them.
		e.verifyEnv = withEnv(e.verifyEnv, e.o.services.Env)
		e.agentEnv = withEnv(e.agentEnv, e.o.services.Env)
		return nil, nil
	}
	specs := make([]env.ServiceSpec, 0, len(services))
	for _, s := range services {
		timeout := time.Duration(s.Timeout)
		if timeout <= 0 {
			timeout = config.DefaultServiceTimeout
		}
		specs = append(specs, env.ServiceSpec{Name: s.Name, Command: s.Command, Init: s.Init, Timeout: timeout})
	}
	cfg := e.o.Sandbox
	if cfg.Mode == sandbox.Bubblewrap && cfg.Bridge == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("runner: services: the bridge: %w", err)
		}
		// This executable links runner/egress, which makes it the services' bridge too.
		cfg.Bridge = exe
		e.o.Sandbox.Bridge = exe
	}
	svcEnv := withEnv(e.verifyEnv, []string{"AKIRA_WORK_TREE=" + e.ws.Dir})
	running, steps, err := env.StartServices(ctx, specs, env.ServiceOptions{
		Env: svcEnv,
		Policy: func(dir string) *sandbox.Policy {
			// The work tree is readable (an init script may load a schema from it), never writable.
			p := cfg.Policy(sandbox.NetNone, dir, "", dir)
			p.ReadOnly = append(p.ReadOnly, e.ws.Dir)
			p.UID = serviceUID
			return p
		},
		DataDir:      func(name string) (string, error) { return e.ws.Scratch("service-" + name) },
		HostLoopback: e.o.AgentNetwork == sandbox.NetAllow || cfg.VerifyNetwork == sandbox.NetAllow,
		Stream:       e.o.Output,
	})
	if err != nil {
		return steps, fmt.Errorf("runner: %w", err)
	}
	if running == nil {
		return steps, nil
	}
	e.services = running
	e.o.Sandbox.Services = append(slices.Clip(e.o.Sandbox.Services), running.Sandbox...)
	e.verifyEnv = withEnv(e.verifyEnv, running.Env)
	e.agentEnv = withEnv(e.agentEnv, running.Env)
	return steps, nil
}

// setupMessage is one line about a setup's outcome.
func setupMessage(r env.Result) string {
	if r.Proposed != "" {
		return fmt.Sprintf("none: `%s` detected from %s would run with the operator's auto_setup (or setup: in .github/akira.yml)", r.Proposed, r.Detected)
	}
	f := r.Failed()
	if f == nil {
		services := 0
		for _, st := range r.Steps {
			if strings.HasPrefix(st.Command, "service ") {
				services++
			}
		}
		if s := r.Snapshot; s != nil && s.Restored {
			msg := fmt.Sprintf("setup restored from the snapshot of %s (%d files)", s.Taken.UTC().Format("2006-01-02 15:04 UTC"), s.Files)
			if services > 0 {
				msg += fmt.Sprintf(" and services started (%d)", services)
			}
			return msg
		}
		saved := ""
		if s := r.Snapshot; s != nil {
			saved = fmt.Sprintf("; its snapshot is kept for the next runs (%d files)", s.Files)
		}
		switch cmds := len(r.Steps) - services; {
		case services == 0:
			return fmt.Sprintf("setup passed (%d commands)", cmds) + saved
		case cmds == 0:
			return fmt.Sprintf("services started (%d)", services)
		default:
			return fmt.Sprintf("setup passed (%d commands) and services started (%d)", cmds, services) + saved
		}
	}
	why := fmt.Sprintf("exit code %d", f.ExitCode)
	if f.Limit != "" {
		why = f.Limit
	}
	return fmt.Sprintf("`%s` failed (%s)", f.Command, why)
}

// checkBase runs the repository-wide verification on the base tree, once per base commit and set of
// commands: a red base branch stops the run before it blames the first task, unless the run was
// asked to start on a red base. A branch that already moved past its base is not checked again: the
// check belongs to the start of a run, when the tree is the base's.
func (e *engine) checkBase(ctx context.Context) error {
	if len(e.o.Verify) == 0 || !e.hasPending() {
		return nil
	}
	baseRef := "refs/remotes/origin/" + e.ws.Base
	out, err := e.ws.Git(ctx, "rev-parse", baseRef, baseRef+"^{tree}", "HEAD^{tree}")
	if err != nil {
		return fmt.Errorf("runner: base check: %w", err)
	}
	f := strings.Fields(out)
	if len(f) != 3 {
		return fmt.Errorf("runner: base check: unexpected rev-parse output %q", out)
	}
	commit, untouched := f[0], f[1] == f[2]
	sum := sha256.Sum256([]byte(e.o.Repo + "\x00" + strings.Join(e.o.Verify, "\x00")))
	key := hex.EncodeToString(sum[:12]) + ":" + commit
	mem := e.o.BaseMemory
	if mem == nil {
		mem = &env.MemoryBase{}
	}
	res, known, err := mem.Base(ctx, key)
	if err != nil {
		return fmt.Errorf("runner: base check: %w", err)
	}
	if !known {
		if !untouched {
			return nil
		}
		home, err := e.ws.Scratch("home-verify")
		if err != nil {
			return fmt.Errorf("runner: %w", err)
		}
		results, _, err := e.runVerify(ctx, verify.Plan{Commands: e.o.Verify, Source: verify.SourceConfigured}, home)
		if err != nil {
			return fmt.Errorf("runner: base check: %w", err)
		}
		res = env.BaseResult{Passed: verify.Passed(results)}
		for _, r := range results {
			if !r.Passed() {
				res.Command, res.ExitCode, res.Tail = r.Command, r.ExitCode, r.Output
				break
			}
		}
		if err := mem.RememberBase(ctx, key, res); err != nil {
			e.o.Logger.Warn("runner: base check result not remembered", "err", err)
		}
	}
	msg := "the base branch passes " + strings.Join(e.o.Verify, " && ")
	if !res.Passed {
		msg = RedBaseMessage(res)
		if e.o.AllowRedBase {
			msg += " (the run goes on: --allow-red-base)"
		}
	}
	if err := e.emit(ctx, Event{Type: EventBaseChecked, BaseCheck: &res, Commit: commit, Message: msg,
		AllowRedBase: e.o.AllowRedBase}); err != nil {
		return err
	}
	if !res.Passed && !e.o.AllowRedBase {
		return envError{ErrRedBase, msg}
	}
	return nil
}

// RedBaseMessage says which command the base branch fails, with the last line of its output.
func RedBaseMessage(r env.BaseResult) string {
	last := ""
	lines := strings.Split(strings.TrimSpace(r.Tail), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "[akira:") {
			last = l
			break
		}
	}
	if len(last) > 200 {
		last = last[:200] + "…"
	}
	if last == "" {
		last = fmt.Sprintf("exit code %d and no output", r.ExitCode)
	}
	return fmt.Sprintf("the base branch fails `%s` before any change: %s", r.Command, last)
}

// openCache opens the run's dependency cache, or nil when there is none to keep (no cache root, no
// lock file, or cache: off).
func (e *engine) openCache(mode string) (*env.Cache, error) {
	if e.o.DepCaches == nil || mode == "off" {
		return nil, nil
	}
	c, err := e.o.DepCaches.Open(e.cacheScope(), e.ws.Dir)
	if err != nil {
		return nil, fmt.Errorf("runner: %w", err)
	}
	return c, nil
}

// cacheScope is the run's scope of the dependency caches and setup snapshots.
func (e *engine) cacheScope() string {
	if e.o.CacheScope != "" {
		return e.o.CacheScope
	}
	return env.ScopeName("local", e.o.Repo)
}

// withEnv returns env with the variables of set in place of the same names.
func withEnv(env, set []string) []string {
	names := map[string]bool{}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		names[name] = true
	}
	var out []string
	for _, kv := range env {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}
