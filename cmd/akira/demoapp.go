//go:build demoapp

// The GitHub App demo (make demo-app). It is built only with the demoapp tag, so the akira binary
// people deploy never carries a fake GitHub; the demo itself runs serve, the function `akira serve`
// runs, against internal/githubtest and an embedded Redis, and plays the team on one issue.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/akira-bot/akira/internal/githubtest"
	"github.com/akira-bot/akira/internal/loopback"
	"github.com/akira-bot/akira/internal/redistest"
	"github.com/akira-bot/akira/runner/sandbox"
)

func init() { subcommands = append(subcommands, newDemoAppCmd) }

// The demo's repository, its people and what they write.
const (
	demoOwner    = "octo"
	demoRepo     = "calc"
	demoPerson   = "alice"
	demoAppSlug  = "akira-demo"
	demoIssue    = "Grow the calculator"
	demoRetryCmd = "/akira retry TestDiv panics with an integer divide by zero: return an error when b is 0, before dividing"
)

// demoWait bounds each step the demo waits for: far more than a step takes, so that a broken demo
// ends with a message instead of hanging CI.
const demoWait = 5 * time.Minute

type demoAppOptions struct {
	examples    string
	keepServing bool
	verbose     bool
}

func newDemoAppCmd() *cobra.Command {
	var o demoAppOptions
	cmd := &cobra.Command{
		Use:   "demo-app",
		Short: "Try the GitHub App on a fake GitHub: no GitHub account, no network, no Redis of yours",
		Long: `demo-app runs the GitHub App as akira serve does (webhook server, Redis queue, workers, the sandbox
and its egress proxy) against Akira's fake GitHub (REST, git over smart HTTP, the App's JWT and
installation tokens) and an embedded Redis, then plays a team on one issue: alice writes /akira run,
a task fails and is escalated, alice answers /akira retry with guidance, the pull request turns ready.
What the team would see on GitHub is printed as it happens; the dashboard serves the run meanwhile.`,
		Args: cobra.NoArgs,
		// It runs serve, which stops itself within its own shutdown grace.
		Annotations: map[string]string{stopAnnotation: stopsItself},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demoApp(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	interactive := isatty.IsTerminal(os.Stdin.Fd()) && isatty.IsTerminal(os.Stdout.Fd())
	cmd.Flags().StringVar(&o.examples, "examples", filepath.Join("examples", "demo"), "the demo's repository (repo/) and scripted agent (agent.sh): examples/demo of Akira's source")
	cmd.Flags().BoolVar(&o.keepServing, "keep-serving", interactive, "keep serving the dashboard after the run, until Ctrl-C (default: when run on a terminal)")
	cmd.Flags().BoolVarP(&o.verbose, "verbose", "v", false, "show the server's log lines (JSON on stderr)")
	return cmd
}

func demoApp(ctx context.Context, o demoAppOptions, out io.Writer) (err error) {
	examples, err := filepath.Abs(o.examples)
	if err != nil {
		return withExit(2, fmt.Errorf("--examples: %w", err))
	}
	agentScript, repoDir := filepath.Join(examples, "agent.sh"), filepath.Join(examples, "repo")
	for _, p := range []string{agentScript, repoDir} {
		if _, err := os.Stat(p); err != nil {
			return withExit(2, fmt.Errorf("--examples: %w (run make demo-app from Akira's source, or point --examples at its examples/demo)", err))
		}
	}
	files, err := readDemoRepo(repoDir)
	if err != nil {
		return err
	}
	if files["ROADMAP.md"] == "" {
		return withExit(2, fmt.Errorf("--examples: %s has no ROADMAP.md, the tasks of the demo's issue", repoDir))
	}

	dir, err := os.MkdirTemp("", "akira-demo-app-")
	if err != nil {
		return fmt.Errorf("demo-app: %w", err)
	}
	defer os.RemoveAll(dir)

	redisPassword, err := randomSecret()
	if err != nil {
		return err
	}
	redisAddr, stopRedis, err := redistest.Embedded(redisPassword)
	if err != nil {
		return fmt.Errorf("demo-app: %w", err)
	}
	defer stopRedis()

	team := &timeline{out: out, owner: demoOwner, repo: demoRepo, heads: map[string]string{}}
	gh, err := githubtest.NewServer(githubtest.WithRoot(filepath.Join(dir, "github")), githubtest.WithAppSlug(demoAppSlug),
		githubtest.WithRequestHook(team.observe))
	if err != nil {
		return fmt.Errorf("demo-app: start the fake GitHub: %w", err)
	}
	defer gh.Close()
	team.gh = gh
	// A retry is a job of its own, in a fresh workspace: with a lock file (the module has no
	// dependencies, so an empty go.sum) and cache: read-write, the Go build cache the first job's
	// verification filled serves the next, instead of compiling the standard library again.
	repoFiles := maps.Clone(files)
	repoFiles["go.sum"] = ""
	repoFiles[".github/akira.yml"] = "cache: read-write\n"
	gh.CreateRepo(demoOwner, demoRepo, repoFiles)
	gh.SetPermission(demoOwner, demoRepo, demoPerson, "write")

	sandboxNote, sandboxMode := "in the sandbox (bubblewrap) behind the egress proxy", ""
	if why := sandbox.Available(""); why != nil {
		// As make demo does: a newcomer's machine without bubblewrap still sees the App work.
		sandboxNote, sandboxMode = "WITHOUT a sandbox: "+why.Error(), string(sandbox.None)
	}
	settings, err := demoSettings(dir, gh, agentScript, examples, sandboxMode, "redis://:"+redisPassword+"@"+redisAddr+"/0")
	if err != nil {
		return err
	}
	token, err := demoToken(ctx, settings["REDIS_URL"])
	if err != nil {
		return err
	}
	adminURL := settings["AKIRA_PUBLIC_URL"]
	// Only the demo's settings: a GITHUB_APP_ID or REDIS_URL of the user's must not send the demo to
	// their real App or Redis.
	getenv := func(k string) string { return settings[k] }

	// The scripted agent's pause is for make demo's live view; here it would only slow the demo down.
	if _, set := os.LookupEnv("DEMO_AGENT_DELAY"); !set {
		os.Setenv("DEMO_AGENT_DELAY", "0")
	}

	// serve logs JSON lines to stderr, which would bury what the team sees: unless -v, they go to a
	// file (shown when the demo fails). Nothing else in the process writes to stderr until serve
	// has returned and stderr is back.
	logPath := filepath.Join(dir, "server.log")
	if !o.verbose {
		logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("demo-app: %w", err)
		}
		stderr := os.Stderr
		os.Stderr = logFile
		defer func() {
			os.Stderr = stderr
			logFile.Close()
			if err != nil && ctx.Err() == nil {
				err = fmt.Errorf("%w\nThe server's last log lines:\n%s", err, logTail(logPath, 40))
			}
		}()
	}

	serveCtx, stopServe := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serve(serveCtx, serveRoles{web: true, worker: true}, getenv) }()
	defer func() {
		stopServe()
		if serr := <-served; serr != nil && err == nil {
			err = serr
		}
	}()
	if err := waitReady(ctx, "http://"+settings["AKIRA_ADDR"]+"/readyz", served); err != nil {
		return err
	}
	serverLog := logPath
	if o.verbose {
		serverLog = "on stderr (-v)"
	}

	fmt.Fprintf(out, `Akira's GitHub App, tried without GitHub: akira serve's own code (webhook server, Redis queue,
workers) against a fake GitHub on this machine.

  fake GitHub  %s (REST, git over smart HTTP, the App's JWT and installation tokens)
  repository   %s/%s: %s, with a .github/akira.yml that keeps Go's build cache between jobs
  Redis        embedded, %s, with a password of its own
  webhook      http://%s/webhook
  dashboard    %s/ui/ (log in with the token %s)
  server log   %s
  agent        %s, a scripted stand-in for a coding agent,
               %s

What the team sees on GitHub, as it happens (links into GitHub lead nowhere: the fake has no web
pages; the dashboard's links work while the demo runs):

`, gh.URL(), demoOwner, demoRepo, repoDir, redisAddr, settings["AKIRA_ADDR"], adminURL, token, serverLog, agentScript, sandboxNote)

	runID, err := team.play(ctx, served, demoIssueBody(files["ROADMAP.md"]))
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\nThe run on the dashboard: %s/ui/runs/%s (log in with the token %s)\n", adminURL, runID, token)
	if !o.keepServing {
		fmt.Fprintln(out, "The demo is over.")
		return nil
	}
	fmt.Fprintln(out, "The server keeps serving the dashboard until you press Ctrl-C.")
	select {
	case <-ctx.Done():
		return nil
	case err := <-served:
		served <- err
		return err
	}
}

// demoSettings are the environment serve reads, for the demo: the fake GitHub's App, its webhook
// with a fresh secret, free loopback ports for the webhook and the admin address (the dashboard,
// which check runs link to), the demo's Redis and operator's file, and workspaces under dir.
func demoSettings(dir string, gh *githubtest.Server, agentScript, examples, sandboxMode, redisURL string) (map[string]string, error) {
	webAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	adminAddr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	webhookSecret, err := randomSecret()
	if err != nil {
		return nil, err
	}
	gh.SetWebhook("http://"+webAddr+"/webhook", webhookSecret)
	operator, err := demoOperator(agentScript, examples, sandboxMode)
	if err != nil {
		return nil, err
	}
	opFile, workDir := filepath.Join(dir, "akira.yaml"), filepath.Join(dir, "work")
	if err := os.WriteFile(opFile, operator, 0o600); err != nil {
		return nil, fmt.Errorf("demo-app: %w", err)
	}
	if err := os.Mkdir(workDir, 0o700); err != nil {
		return nil, fmt.Errorf("demo-app: %w", err)
	}
	return map[string]string{
		"GITHUB_APP_ID":          fmt.Sprint(gh.AppID()),
		"GITHUB_PRIVATE_KEY":     string(gh.PrivateKeyPEM()),
		"GITHUB_WEBHOOK_SECRET":  webhookSecret,
		"GITHUB_API_URL":         gh.URL(),
		"AKIRA_ADDR":             webAddr,
		"AKIRA_ADMIN_ADDR":       adminAddr,
		"AKIRA_PUBLIC_URL":       "http://" + adminAddr,
		"REDIS_URL":              redisURL,
		"AKIRA_CONFIG":           opFile,
		"AKIRA_WORKDIR":          workDir,
		"AKIRA_SHUTDOWN_TIMEOUT": "10s",
	}, nil
}

// demoOperator is the operator's file of the demo: the scripted agent, which the sandbox shows
// read-only; one attempt per task, so that the task the agent gets wrong is escalated at once; the
// detected setup (go mod download), which opens the dependency cache; and no waiting for the pull
// request's own CI, which the fake repository has none of.
func demoOperator(agentScript, examples, sandboxMode string) ([]byte, error) {
	box := map[string]any{"read_only": []string{examples}}
	if sandboxMode != "" {
		box["mode"] = sandboxMode
	}
	op, err := yaml.Marshal(map[string]any{
		"default_agent": "demo",
		"max_attempts":  1,
		"auto_setup":    true,
		"agents": map[string]any{"demo": map[string]any{
			"kind":    "exec",
			"command": "sh '" + strings.ReplaceAll(agentScript, "'", `'\''`) + "'",
			"env":     []string{"DEMO_AGENT_DELAY"},
			"timeout": "5m",
		}},
		"ci":      map[string]any{"watch": "off"},
		"sandbox": box,
	})
	if err != nil {
		return nil, fmt.Errorf("demo-app: the operator's file: %w", err)
	}
	return op, nil
}

// demoIssueBody is the issue alice writes: the demo roadmap's tasks as the issue's checklist.
func demoIssueBody(roadmap string) string {
	_, tasks, _ := strings.Cut(roadmap, "\n## ")
	return "Let's grow calc into a real calculator. The plan:\n\n## " + tasks
}

// readDemoRepo reads the files under dir, by slash-separated path.
func readDemoRepo(dir string) (map[string]string, error) {
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("demo-app: read the demo repository: %w", err)
	}
	return files, nil
}

// demoToken creates a control token for the dashboard with akira token create, on the demo's Redis.
// The command reads its Redis from the environment: for the moment it runs, that is the demo's, and
// a REDIS_PASSWORD of the user's is left out.
func demoToken(ctx context.Context, redisURL string) (string, error) {
	for name, value := range map[string]string{"REDIS_URL": redisURL, "REDIS_PASSWORD": ""} {
		old, had := os.LookupEnv(name)
		os.Setenv(name, value)
		defer func() {
			if had {
				os.Setenv(name, old)
			} else {
				os.Unsetenv(name)
			}
		}()
	}
	cmd := newTokenCmd()
	var stdout, stderr strings.Builder
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"create", "demo", "--scope", "control"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		return "", fmt.Errorf("demo-app: create the dashboard's token: %w: %s", err, stderr.String())
	}
	return strings.TrimSpace(stdout.String()), nil
}

// freeLoopbackAddr is a loopback address whose port is free now: serve binds it a moment later.
func freeLoopbackAddr() (string, error) {
	addr, err := loopback.FreeAddr()
	if err != nil {
		return "", fmt.Errorf("demo-app: find a free port: %w", err)
	}
	return addr, nil
}

// randomSecret is a secret of the demo's (the webhook's, Redis's): its ports are open to every local user.
func randomSecret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("demo-app: secret: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// logTail is the end of the server's log, for a demo that failed.
func logTail(path string, lines int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// waitReady polls the server's readiness until it answers 200, the server ends, or demoWait passes.
func waitReady(ctx context.Context, url string, served chan error) error {
	deadline := time.Now().Add(demoWait)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("demo-app: %w", err)
		}
		if resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-served:
			served <- err
			return fmt.Errorf("demo-app: the server stopped before it was ready: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("demo-app: the server was not ready after " + demoWait.String())
		}
	}
}
