package runner

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/sandboxtest"
	"github.com/akira-bot/akira/runner/env"
	"github.com/akira-bot/akira/runner/gittest"
	"github.com/akira-bot/akira/runner/sandbox"
)

// snapshotRepo is a repository whose setup makes a venv-like directory holding the work tree's path,
// an ignored generated file, and counts its runs in logs/setup-runs.
func snapshotRepo(logs string, extra map[string]string) map[string]string {
	files := map[string]string{
		"ROADMAP.md":        oneTask,
		".gitignore":        "gen/\n",
		"requirements.txt":  "slug==1.0\n",
		"scripts/setup.sh":  "mkdir -p .env/bin gen && printf '#!%s/.env/bin/python\\n' \"$PWD\" > .env/bin/tool && chmod +x .env/bin/tool && echo made > gen/out.txt\n",
		".github/akira.yml": "setup:\n  - echo run >> " + logs + "/setup-runs\n  - sh scripts/setup.sh\nverify:\n  - test -f gen/out.txt && grep -q \"^#!$PWD/.env/bin/python\" .env/bin/tool\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return files
}

func setupRuns(t *testing.T, logs string) int {
	t.Helper()
	data, _ := os.ReadFile(filepath.Join(logs, "setup-runs"))
	return strings.Count(string(data), "run")
}

func setupEvent(t *testing.T, rec *recorder) Event {
	t.Helper()
	ev := rec.of(EventSetupFinished, "")
	if len(ev) != 1 || ev[0].Setup == nil {
		t.Fatalf("setup events = %+v, want one", ev)
	}
	return ev[0]
}

// The second run with the same inputs restores what the first run's setup made, with the new work
// tree's path in it, instead of running setup; verification and checkpoints are as before.
func TestSetupSnapshotRestoredOnTheNextRun(t *testing.T) {
	logs := t.TempDir()
	f := newFixture(t, snapshotRepo(logs, nil))
	caches := &env.Caches{Root: t.TempDir()}
	run := func(branch string) Event {
		t.Helper()
		out, rec, err := f.run(t, Options{Inputs: Inputs{Branch: branch}, DepCaches: caches, CacheScope: "inst-1--o--r", Agent: f.agent(`touch T1.txt`)})
		if err != nil {
			t.Fatalf("run on %s: %v", branch, err)
		}
		wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
		if bases := rec.of(EventBaseChecked, ""); len(bases) != 1 || !bases[0].BaseCheck.Passed {
			t.Fatalf("run on %s: base check = %+v, want the restored tree to pass verification", branch, bases)
		}
		if got := gittest.Git(t, f.repo.Remote, "show", "--name-only", "--format=", branch); got != "ROADMAP.md\nT1.txt" {
			t.Errorf("run on %s: the checkpoint changed %q, want the roadmap's tick and T1.txt", branch, got)
		}
		return setupEvent(t, rec)
	}
	first := run("akira/one")
	if s := first.Setup.Snapshot; s == nil || s.Restored || s.Files == 0 || len(first.Setup.Steps) != 2 {
		t.Fatalf("first setup = %+v, want both commands run and a snapshot saved", first.Setup)
	}
	if !strings.Contains(first.Message, "setup passed (2 commands); its snapshot is kept for the next runs") {
		t.Errorf("first message = %q", first.Message)
	}
	second := run("akira/two")
	if s := second.Setup.Snapshot; s == nil || !s.Restored || len(second.Setup.Steps) != 0 || setupRuns(t, logs) != 1 {
		t.Fatalf("second setup = %+v (setup ran %d times), want the snapshot restored and setup not run", second.Setup, setupRuns(t, logs))
	}
	if !strings.HasPrefix(second.Message, "setup restored from the snapshot of ") || !strings.Contains(second.Message, "files)") {
		t.Errorf("second message = %q", second.Message)
	}
	entries, err := caches.List()
	if err != nil || len(entries) != 2 || len(depEntries(t, caches)) != 1 {
		t.Errorf("caches = %+v (%v), want the dependency cache and the snapshot", entries, err)
	}
}

func TestSetupSnapshotNotTaken(t *testing.T) {
	tests := []struct {
		name  string
		extra func(logs string) map[string]string
	}{
		{"setup changed a tracked file", func(string) map[string]string {
			return map[string]string{"scripts/setup.sh": snapshotRepo("", nil)["scripts/setup.sh"] + "echo changed >> requirements.txt\n"}
		}},
		{"snapshot off", func(logs string) map[string]string {
			cfg := snapshotRepo(logs, nil)[".github/akira.yml"]
			cfg = strings.Replace(cfg, "setup:\n  - echo", "setup:\n  snapshot: off\n  commands:\n  - echo", 1)
			cfg = strings.Replace(cfg, "\n  - sh scripts", "\n  - sh scripts", 1)
			return map[string]string{".github/akira.yml": cfg}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := t.TempDir()
			f := newFixture(t, snapshotRepo(logs, tt.extra(logs)))
			caches := &env.Caches{Root: t.TempDir()}
			for _, branch := range []string{"akira/one", "akira/two"} {
				_, rec, err := f.run(t, Options{Inputs: Inputs{Branch: branch}, DepCaches: caches, Agent: f.agent(`touch T1.txt`)})
				if err != nil {
					t.Fatalf("run on %s: %v", branch, err)
				}
				if ev := setupEvent(t, rec); ev.Setup.Snapshot != nil || len(ev.Setup.Steps) != 2 {
					t.Fatalf("run on %s: setup = %+v, want it run and no snapshot", branch, ev.Setup)
				}
			}
			if n := setupRuns(t, logs); n != 2 {
				t.Errorf("setup ran %d times, want 2", n)
			}
		})
	}
}

// A snapshot is another scope's never, and not one made from other inputs: another installation, a
// changed setup script or changed commands run setup again.
func TestSetupSnapshotKeyAndScope(t *testing.T) {
	logs := t.TempDir()
	caches := &env.Caches{Root: t.TempDir()}
	runs := []struct {
		name, scope string
		extra       map[string]string
		restored    bool
	}{
		{"first", "inst-1--o--r", nil, false},
		{"same", "inst-1--o--r", nil, true},
		{"another installation", "inst-2--o--r", nil, false},
		{"the script changed", "inst-1--o--r", map[string]string{"scripts/setup.sh": snapshotRepo("", nil)["scripts/setup.sh"] + "true\n"}, false},
		{"the lock file changed", "inst-1--o--r", map[string]string{"requirements.txt": "slug==2.0\n"}, false},
		{"the commands changed", "inst-1--o--r", map[string]string{".github/akira.yml": strings.Replace(snapshotRepo(logs, nil)[".github/akira.yml"], "echo run", "echo  run", 1)}, false},
	}
	for _, r := range runs {
		f := newFixture(t, snapshotRepo(logs, r.extra))
		_, rec, err := f.run(t, Options{DepCaches: caches, CacheScope: r.scope, Agent: f.agent(`touch T1.txt`)})
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		s := setupEvent(t, rec).Setup.Snapshot
		if s == nil || s.Restored != r.restored {
			t.Errorf("%s: snapshot = %+v, want restored=%v", r.name, s, r.restored)
		}
	}
}

// A snapshot tampered with in the cache (an entry climbing out of the tree, an absolute one) is
// refused: setup runs instead, the run passes, nothing is written outside the work tree.
func TestSetupSnapshotTamperedFallsBackToSetup(t *testing.T) {
	outside := t.TempDir()
	abs := filepath.Join(outside, "abs-escape")
	for _, bad := range []string{"../escape", abs} {
		t.Run(filepath.Base(bad), func(t *testing.T) {
			logs := t.TempDir()
			f := newFixture(t, snapshotRepo(logs, nil))
			caches := &env.Caches{Root: t.TempDir()}
			scope := "inst-1--o--r"
			if _, _, err := f.run(t, Options{Inputs: Inputs{Branch: "akira/one"}, DepCaches: caches, CacheScope: scope, Agent: f.agent(`touch T1.txt`)}); err != nil {
				t.Fatal(err)
			}
			entries, _ := caches.List()
			var dir string
			for _, e := range entries {
				if e.Kind == env.KindSnapshot {
					dir = filepath.Join(caches.Root, scope, e.Key)
				}
			}
			if dir == "" {
				t.Fatalf("caches = %+v, want a snapshot", entries)
			}
			// Rewrite the tar with the bad entry after a good one, and a manifest that matches it.
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, name := range []string{"gen2.txt", bad} {
				if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 2, ModTime: time.Now()}); err != nil {
					t.Fatal(err)
				}
				_, _ = tw.Write([]byte("x\n"))
			}
			_ = tw.Close()
			if err := os.WriteFile(filepath.Join(dir, "snapshot.tar"), buf.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			var meta map[string]any
			data, _ := os.ReadFile(filepath.Join(dir, "manifest.json"))
			if err := json.Unmarshal(data, &meta); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(buf.Bytes())
			meta["tar_sha256"], meta["files"] = hex.EncodeToString(sum[:]), 2
			data, _ = json.Marshal(meta)
			if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o600); err != nil {
				t.Fatal(err)
			}

			out, rec, err := f.run(t, Options{Inputs: Inputs{Branch: "akira/two"}, DepCaches: caches, CacheScope: scope, Agent: f.agent(`touch T1.txt`)})
			if err != nil {
				t.Fatal(err)
			}
			wantStatuses(t, out, map[string]TaskStatus{"T1": TaskDone})
			if ev := setupEvent(t, rec); len(ev.Setup.Steps) != 2 || ev.Setup.Snapshot == nil || ev.Setup.Snapshot.Restored {
				t.Fatalf("setup = %+v, want it run (and a new snapshot saved)", ev.Setup)
			}
			if n := setupRuns(t, logs); n != 2 {
				t.Errorf("setup ran %d times, want 2", n)
			}
			for _, p := range []string{filepath.Join(f.workDir, "escape"), abs} {
				if _, err := os.Lstat(p); err == nil {
					_ = os.Remove(p)
					t.Errorf("the tampered snapshot wrote %s", p)
				}
			}
			if got := gittest.Git(t, f.repo.Remote, "show", "--name-only", "--format=", "akira/two"); got != "ROADMAP.md\nT1.txt" {
				t.Errorf("the checkpoint changed %q: the good entry of the refused snapshot was left", got)
			}
		})
	}
}

// Under bubblewrap the agent and verification see the dependency cache's key directory only: the
// snapshot beside it in the scope is neither readable nor writable for them, even with cache:
// read-write.
func TestSetupSnapshotOutOfTheAgentsReach(t *testing.T) {
	sandboxtest.Require(t)
	for _, mode := range []string{"read-only", "read-write"} {
		t.Run(mode, func(t *testing.T) {
			probe := `ls "$npm_config_cache/../.." > "$LOG/seen-` + mode + `" 2>&1; for d in "$npm_config_cache"/../../setup-*; do test -e "$d" && echo VISIBLE >> "$LOG/seen-` + mode + `"; done; `
			f := newFixture(t, map[string]string{
				"ROADMAP.md": oneTask, "package-lock.json": `{"v":1}`,
				".github/akira.yml": "cache: " + mode + "\nsetup:\n  - mkdir -p node_modules/pad && echo 1 > node_modules/pad/index.js\n" +
					"verify:\n  - \"" + strings.ReplaceAll(probe, `"`, `\"`) + "test -f node_modules/pad/index.js\"\n",
			})
			caches := &env.Caches{Root: t.TempDir()}
			box := sandbox.Config{Mode: sandbox.Bubblewrap, VerifyNetwork: sandbox.NetNone, ReadWrite: []string{f.logs}}
			t.Setenv("LOG", f.logs) // verification's $LOG, passed by name
			_, rec, err := f.run(t, Options{DepCaches: caches, CacheScope: "inst-1--o--r", Sandbox: box, AgentNetwork: sandbox.NetNone,
				Env: []string{"LOG"}, Agent: f.agent(probe + `touch T1.txt`)})
			if err != nil {
				t.Fatal(err)
			}
			if s := setupEvent(t, rec).Setup.Snapshot; s == nil || s.Files == 0 {
				t.Fatalf("snapshot = %+v, want one saved before the agent ran", s)
			}
			seen := readFile(t, filepath.Join(f.logs, "seen-"+mode))
			t.Logf("the scope as the sandbox shows it: %q", seen)
			if strings.TrimSpace(seen) == "" || strings.Contains(seen, "VISIBLE") || strings.Contains(seen, "setup-") {
				t.Errorf("the agent or verification saw the snapshot: %q", seen)
			}
		})
	}
}
