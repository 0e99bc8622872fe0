package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/akira-bot/akira/runner"
	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/agent/profiles"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/proc"
	"github.com/akira-bot/akira/runner/roadmap"
	"github.com/akira-bot/akira/runner/sandbox"
)

func init() { subcommands = append(subcommands, newRunCmd) }

// runFlags are the flags of `akira run`.
type runFlags struct {
	allowRedBase                              bool
	repo, roadmap, branch, base               string
	agentCmd, agentName, model                string
	sandbox                                   string
	sandboxRO                                 []string
	configFile                                string
	maxAttempts                               int
	parallel                                  int
	verify, skip, approve, env                []string
	nonInteractive, json                      bool
	verbose, dryRun                           bool
	agentTimeout, verifyTimeout, stallTimeout time.Duration
	workDir, runID, author                    string
	format                                    string
	includeOptional                           bool
}

func newRunCmd() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run the tasks of a roadmap with a coding agent, one verified checkpoint commit per task",
		Long: `Run clones the repository into a temporary workspace, runs each open task of the roadmap with
the coding agent, verifies it, and commits one checkpoint per verified task to a branch
(default akira/<roadmap name>), pushing it back after each checkpoint. Your working tree,
index and current branch are never touched. Running the same command again continues the
branch: finished tasks are never redone, parked ones are retried.

The agent command runs through sh -c in the workspace. The prompt arrives on stdin and in the
file $AKIRA_PROMPT_FILE; AKIRA_TASK_ID, AKIRA_TASK_TITLE, AKIRA_ATTEMPT and AKIRA_WORKSPACE are
set, and from the second attempt on AKIRA_FEEDBACK_FILE holds what went wrong. Its environment
is scrubbed: pass what it needs (an API key) with --env NAME. A model key passed so
(ANTHROPIC_API_KEY, OPENAI_API_KEY, CODEX_API_KEY) never enters the sandbox: Akira's egress
proxy holds it, the agent gets a placeholder and a base URL (ANTHROPIC_BASE_URL,
OPENAI_BASE_URL) pointing at the proxy, which adds the key and meters every call. The proxy
holds one; any other model key, under whatever name, reaches no command (agent, setup,
verification, services).

The agent and verification reach the network only through the egress proxy, to the
operator's allowlist (default: the package registries); network none and allow are set in
--config.

Each attempt's timeline (model calls with their cost, the agent's steps, the files changed,
verification, egress refusals, the verdict) and its log are kept, secrets masked, in
AKIRA_RUNS_DIR (default akira/runs in the user's cache directory; off keeps nothing) for
AKIRA_LOG_RETENTION (336h): akira status --attempt TASK/N prints one.

Exit codes: 0 all tasks done, 3 an escalation is pending, 2 invalid roadmap or usage, or an
agent that cannot run (found before the first attempt), 1 other failure, 130 interrupted.`,
		Example: `  akira run --agent-cmd 'claude -p --permission-mode acceptEdits' --model claude-sonnet-4-5 --env ANTHROPIC_API_KEY
  akira run --agent-cmd 'codex exec -m "$AKIRA_MODEL" -c openai_base_url="$OPENAI_BASE_URL" -c web_search=disabled -s workspace-write --skip-git-repo-check --json -' --model gpt-5 --env CODEX_API_KEY
  akira run --roadmap docs/ROADMAP.md --verify 'make lint' --verify 'go test ./...' --agent-cmd ./agent.sh
  akira run --non-interactive --json --agent-cmd ./agent.sh > events.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRun(cmd.Context(), cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.repo, "repo", "", "local repository path or clone URL (default: the git repository of the current directory)")
	fl.StringVar(&f.roadmap, "roadmap", "", "roadmap path inside the repository (default: roadmap of .github/akira.yml, else ROADMAP.md)")
	fl.StringVar(&f.branch, "branch", "", "branch for the checkpoints (default: akira/<roadmap file name, lowercased>)")
	fl.StringVar(&f.base, "base", "", "branch a new branch starts from (default: the repository's default branch)")
	fl.StringVar(&f.agentCmd, "agent-cmd", "", "shell command of the coding agent (prompt on stdin and in $AKIRA_PROMPT_FILE)")
	fl.StringVar(&f.sandbox, "sandbox", "", "confine the agent and verification: bubblewrap or none (default: sandbox of --config, else bubblewrap when it runs here)")
	fl.StringVar(&f.agentName, "agent", "", "agent profile of --config, or a built-in agent: openai, anthropic (default: default_agent of --config)")
	fl.StringVar(&f.model, "model", "", "model of the agent, overriding the profile's: the built-in agent's; a CLI's, told in $AKIRA_MODEL (and ANTHROPIC_MODEL…) and pricing its calls")
	fl.StringVar(&f.configFile, "config", os.Getenv("AKIRA_CONFIG"), "operator configuration file with agent profiles ($AKIRA_CONFIG)")
	fl.IntVar(&f.parallel, "parallel", 1, "independent tasks ([P], or with declared dependencies) to run at once")
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "attempts per task before asking a human (default: max_attempts of .github/akira.yml, else 3)")
	fl.StringArrayVar(&f.sandboxRO, "sandbox-ro", nil, "directory the sandbox shows read-only besides the system's, e.g. a toolchain or the agent's script (repeatable)")
	fl.StringArrayVar(&f.verify, "verify", nil, "verification command for tasks without their own verify lines (repeatable)")
	fl.StringArrayVar(&f.skip, "skip", nil, "task id not to run; tasks that depend on it stay blocked (repeatable)")
	fl.StringArrayVar(&f.approve, "approve", nil, "task id whose parked work to accept as its checkpoint (repeatable)")
	fl.StringVar(&f.format, "format", "", "read the markdown plan as "+strings.Join(roadmap.Conventions, ", ")+" (default: detected)")
	fl.BoolVar(&f.includeOptional, "include-optional", false, "also run the tasks the plan marks optional (Kiro's \"- [ ]* …\")")
	fl.BoolVar(&f.allowRedBase, "allow-red-base", false, "start although the base branch fails its repository-wide verify (the first task fixes the build)")
	fl.StringArrayVar(&f.env, "env", nil, "environment variable passed to the agent and verification (repeatable); a model key such as ANTHROPIC_API_KEY stays with the egress proxy, the agent gets a placeholder")
	fl.BoolVar(&f.nonInteractive, "non-interactive", false, "never ask: park a failing task, finish independent tasks, exit 3")
	fl.BoolVar(&f.json, "json", false, "print one JSON event per line instead of the live view")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "also show the output of the agent and of verification")
	fl.BoolVar(&f.dryRun, "dry-run", false, "run the agent and verification and show the diff; push nothing")
	fl.DurationVar(&f.agentTimeout, "agent-timeout", runner.DefaultAgentTimeout, "time limit of one agent attempt")
	fl.DurationVar(&f.verifyTimeout, "verify-timeout", runner.DefaultVerifyTimeout, "time limit of each verification command")
	fl.DurationVar(&f.stallTimeout, "stall-timeout", runner.DefaultStallTimeout, "end an attempt whose agent shows no output and changes no file for this long")
	fl.StringVar(&f.workDir, "work-dir", "", "directory for the temporary workspace (default: $TMPDIR)")
	fl.StringVar(&f.runID, "run-id", "", "run id for the Akira-Run trailer (default: generated)")
	fl.StringVar(&f.author, "author", runner.DefaultAuthor.String(), "author and committer of checkpoints, \"Name <email>\"")
	_ = fl.MarkHidden("run-id")
	return cmd
}

func runRun(ctx context.Context, cmd *cobra.Command, f *runFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	// The engine's and the proxy's log lines read like the command's other messages, on stderr.
	logger := slog.New(newCLIHandler(stderr, f.verbose))
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(logger)
	if f.parallel < 1 || f.parallel > 32 {
		return withExit(2, fmt.Errorf("--parallel: %d is out of range (1 to 32)", f.parallel))
	}
	if f.maxAttempts < 0 {
		return withExit(2, errors.New("--max-attempts must be positive"))
	}
	if f.format != "" && !slices.Contains(roadmap.Conventions, f.format) {
		return withExit(2, fmt.Errorf("--format %q: want one of %s", f.format, strings.Join(roadmap.Conventions, ", ")))
	}
	repo, err := resolveRepo(ctx, f.repo)
	if err != nil {
		return withExit(2, err)
	}
	for _, line := range uncommittedPlan(ctx, repo, f.roadmap) {
		fmt.Fprintln(stderr, "akira: "+line)
	}
	author, err := runner.ParseIdentity(f.author)
	if err != nil {
		return withExit(2, fmt.Errorf("--author: %w", err))
	}
	var stream io.Writer
	if f.verbose {
		stream = stderr
	}
	op, err := config.LoadOperator(f.configFile)
	if err != nil {
		return withExit(2, err)
	}
	keys := profiles.ModelKeys(op, os.Getenv, f.env)
	ag, agentNet, keyWarnings, err := agentFromFlags(f, op, keys, stream)
	if err != nil {
		return withExit(2, err)
	}
	agentName := "--agent-cmd"
	if strings.TrimSpace(f.agentCmd) == "" {
		agentName, _, _ = profiles.Resolve(op, f.agentName)
	}
	if warning, err := runModelCheck(agentName, ag, op); err != nil {
		return withExit(2, err)
	} else if warning != "" {
		fmt.Fprintln(stderr, "akira: warning: "+warning)
	}
	for _, d := range f.sandboxRO {
		abs, err := filepath.Abs(d)
		if err != nil {
			return withExit(2, fmt.Errorf("--sandbox-ro %s: %w", d, err))
		}
		op.Sandbox.ReadOnly = append(op.Sandbox.ReadOnly, abs)
	}
	judge, err := profiles.NewJudge(op.JudgeProfile(), profiles.Options{})
	if err != nil {
		return withExit(2, err)
	}
	semantic, err := profiles.NewSemantic(op.Memory, profiles.Options{})
	if err != nil {
		return withExit(2, err)
	}
	box, warning, err := resolveSandbox(op, sandboxChoice{flag: f.sandbox, available: func() error { return sandbox.Available("") }})
	if err != nil {
		return withExit(2, err)
	}
	if warning != "" {
		fmt.Fprintln(stderr, "akira: warning: "+warning)
	}
	for _, w := range networkWarnings(box, agentNet) {
		fmt.Fprintln(stderr, "akira: warning: "+w)
	}
	for _, w := range append(keyWarnings, verifyKeyWarnings(op.Env, keys)...) {
		fmt.Fprintln(stderr, "akira: warning: "+w)
	}
	box.Egress = egress.New(egress.Config{})
	box.Withhold = keys
	if len(keys.Values) > 0 {
		// With sandbox none, a command of this user could read this process's /proc/<pid>/environ,
		// which keeps the keys it was started with, and its memory, where the proxy holds them.
		if err := closeProcToSameUser(); err != nil {
			fmt.Fprintln(stderr, "akira: warning: could not close /proc to processes of the same user: "+err.Error())
		}
	}

	var reporter runner.Reporter
	var term *runner.Terminal
	if f.json {
		reporter = runner.NewJSONReporter(stdout)
	} else {
		term = runner.NewTerminal(stdout, isTerminal(stdout) && !f.verbose)
		defer term.Close()
		reporter = term
	}
	retention, err := logRetention()
	if err != nil {
		return withExit(2, err)
	}
	secrets := localSecrets(keys.Values)
	var record *localRecord
	if dir := runsDir(); dir != "" {
		if err := pruneRuns(dir, retention, time.Now()); err != nil {
			fmt.Fprintln(stderr, "akira: warning: old runs not removed: "+err.Error())
		}
		record = newLocalRecord(dir, reporter, secrets)
		reporter = record
	}
	decisions := map[string]runner.Decision{}
	for _, id := range f.approve {
		decisions[id] = runner.Decision{Kind: runner.DecisionApprove}
	}
	opts := runner.Options{
		Inputs: runner.Inputs{
			Repo:            repo,
			Roadmap:         f.roadmap,
			Branch:          f.branch,
			Base:            f.base,
			RunID:           f.runID,
			Verify:          f.verify,
			Skip:            f.skip,
			Decisions:       decisions,
			DryRun:          f.dryRun,
			Convention:      f.format,
			IncludeOptional: f.includeOptional,
		},
		Limits: runner.Limits{
			MaxAttempts:  f.maxAttempts,
			MaxParallel:  f.parallel,
			AgentTimeout: f.agentTimeout,
			AllowRedBase: f.allowRedBase,
		},
		Hooks: runner.Hooks{
			Reporter: reporter,
			Output:   stream,
			Secrets:  secrets,
			Logger:   logger,
		},
		Agent:   ag,
		Env:     f.env,
		Author:  author,
		WorkDir: f.workDir,
		Cache:   localCache(),
		Lessons: localLessons(repo),
		GitAuth: gitAuthFromEnv(repo),
		GitEnv: []string{"SSH_AUTH_SOCK", "SSH_AGENT_PID", "GIT_SSH", "GIT_SSH_COMMAND", "SSL_CERT_FILE", "SSL_CERT_DIR",
			"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"},
		Sandbox:      box,
		AgentNetwork: agentNet,
		Semantic:     semantic,
		DepCaches:    localDepCaches(),
	}
	opts.ApplyOperator(op) // the operator's file, as a worker reads it; then the flags given
	if cmd.Flags().Changed("verify-timeout") || op.VerifyTimeout <= 0 {
		opts.VerifyTimeout = f.verifyTimeout
	}
	if cmd.Flags().Changed("stall-timeout") || op.StallTimeout <= 0 {
		opts.StallTimeout = f.stallTimeout
	}
	if record != nil {
		opts.Timeline = record // a nil *localRecord must not become a non-nil sink
	}
	if judge != nil {
		opts.Judge = judge // a nil *llm.Judge must not become a non-nil interface
	}
	if !f.nonInteractive && isTerminal(cmd.InOrStdin()) {
		p := &linePrompter{in: bufio.NewReader(cmd.InOrStdin()), out: stderr}
		opts.Escalate = func(ctx context.Context, esc runner.Escalation) (runner.Decision, error) {
			if term != nil {
				term.Pause()
			}
			return p.Decide(ctx, esc)
		}
	}

	out, err := runner.Run(ctx, opts)
	// With --json the outcome's diff is in the run_finished event.
	if f.dryRun && err == nil && !f.json {
		if strings.TrimSpace(out.Diff) == "" {
			fmt.Fprintln(stdout, "akira: dry run: nothing would be pushed")
		} else {
			fmt.Fprintf(stdout, "akira: dry run: nothing was pushed; branch %s would get:\n\n%s\n", out.Branch, out.Diff)
		}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return withExit(130, fmt.Errorf("interrupted: the workspace is removed and branch %s is at its last checkpoint", out.Branch))
	case errors.Is(err, runner.ErrInvalidPlan), errors.Is(err, runner.ErrUsage):
		return withExit(2, engineError{err})
	case err != nil:
		return withExit(1, engineError{err})
	}
	switch out.Status {
	case runner.StatusParked:
		fmt.Fprintln(stderr, parkedHelp(out, f.dryRun))
		return withExit(3, nil)
	case runner.StatusAborted:
		return withExit(1, errors.New("aborted: the branch is at its last checkpoint"))
	}
	return nil
}

func parkedHelp(out runner.Outcome, dryRun bool) string {
	var b strings.Builder
	for _, p := range out.Parked {
		fmt.Fprintf(&b, "akira: task %s (%s) needs a decision: %s\n", p.TaskID, p.Title, p.Summary)
	}
	if dryRun {
		// A dry run pushes no parked ref, so there is nothing for --approve to accept later.
		b.WriteString("akira: dry run: nothing was pushed and the parked work was removed with the temporary workspace; " +
			"run without --dry-run to keep it on the remote, where --approve ID can accept it")
		return b.String()
	}
	b.WriteString("akira: run the same command again to retry, add --approve ID to accept the parked work, or --skip ID")
	return b.String()
}

// agentFromFlags builds the agent of a run: --agent-cmd, else the profile --agent names (in --config,
// or a built-in one), else the configuration's default_agent; with the network its commands may
// reach, and what the run says at its start about the model keys the agent is given (keys, see
// profiles.ModelKeys) that no command gets.
func agentFromFlags(f *runFlags, op config.Operator, keys sandbox.Withheld, stream io.Writer) (agent.Agent, sandbox.Network, []string, error) {
	if strings.TrimSpace(f.agentCmd) != "" {
		if f.agentName != "" {
			return nil, "", nil, errors.New("--agent-cmd and --agent both choose the agent: give one")
		}
		return agentCmdFromFlags(f, op, keys, stream)
	}
	if f.agentName == "" && op.DefaultAgent == "" && len(op.Agents) == 0 {
		return nil, "", nil, errors.New("no agent: give the coding agent's command with --agent-cmd (e.g. --agent-cmd 'claude -p --permission-mode acceptEdits'), " +
			"a built-in agent with --agent openai|anthropic --model NAME, or a profile of --config with --agent NAME")
	}
	name, p, err := profiles.Resolve(op, f.agentName)
	if err != nil {
		return nil, "", nil, err
	}
	withheld, err := profiles.AgentKeys(name, p, f.env, op, keys, os.Getenv)
	if err != nil {
		return nil, "", nil, err
	}
	if p.Kind == "exec" && time.Duration(p.Timeout) == 0 {
		p.Timeout = config.Duration(f.agentTimeout)
	}
	if p.Kind != "exec" && time.Duration(p.Timeout) == 0 && f.agentTimeout != runner.DefaultAgentTimeout {
		p.Timeout = config.Duration(f.agentTimeout)
	}
	ag, err := profiles.New(name, p, profiles.Options{Model: f.model, PassEnv: f.env, Stream: stream})
	return ag, p.AgentNetwork(), withheldWarnings(withheld, ag), err
}

// agentCmdFromFlags builds the agent of --agent-cmd. A coding-agent CLI talks to its model API: the
// first key of that API passed with --env stays with the egress proxy, which the CLI reaches
// through the base URL it is given; every other model key is held back from every command.
func agentCmdFromFlags(f *runFlags, op config.Operator, keys sandbox.Withheld, stream io.Writer) (agent.Agent, sandbox.Network, []string, error) {
	p := config.AgentProfile{Kind: "exec", Command: f.agentCmd, Prices: op.Prices}
	for _, name := range f.env {
		switch config.KeyAPI(name) {
		case egress.ProtocolAnthropic:
			p.API, p.AgentKeyEnv, p.BaseURL = egress.ProtocolAnthropic, name, os.Getenv("ANTHROPIC_BASE_URL")
		case egress.ProtocolOpenAI:
			p.API, p.APIKeyEnv, p.AgentKeyEnv, p.BaseURL = egress.ProtocolOpenAI, name, name, os.Getenv("OPENAI_BASE_URL")
		default:
			continue
		}
		break
	}
	var withheld []string
	for _, name := range f.env {
		if name == p.AgentKeyEnv || !keys.Withholds(name, os.Getenv(name)) || slices.Contains(withheld, name) {
			continue
		}
		if p.API == "" {
			return nil, "", nil, agentCmdKeyError(name, profiles.KeyOf(name, op, os.Getenv))
		}
		withheld = append(withheld, name)
	}
	model, err := profiles.ModelRoute("--agent-cmd", p, profiles.Options{Model: f.model})
	if err != nil {
		return nil, "", nil, err
	}
	passEnv := f.env
	if model != nil {
		passEnv = slices.DeleteFunc(slices.Clone(f.env), func(n string) bool { return n == model.KeyEnv || n == model.KeyVar })
	}
	ag := &agent.Exec{Command: f.agentCmd, PassEnv: passEnv, Env: profiles.ModelEnv(p, f.model), Timeout: f.agentTimeout, Stream: stream, Model: model}
	return ag, sandbox.NetAllowlist, withheldWarnings(withheld, ag), nil
}

// agentCmdKeyError is the error of a model key passed with --env that the egress proxy of an
// --agent-cmd cannot hold: name, which holds the key of the variable key.
func agentCmdKeyError(name, key string) error {
	if key != name && config.KeyAPI(key) != "" {
		return fmt.Errorf("--env %s holds a model key (the value of $%s), which never enters the sandbox: pass --env %s instead, "+
			"so that the egress proxy holds it and the agent gets a placeholder", name, key, key)
	}
	what := "--env " + name + " is a model key"
	if key != name {
		what = fmt.Sprintf("--env %s holds a model key (the value of $%s)", name, key)
	}
	return fmt.Errorf("%s, which never enters the sandbox, and the egress proxy of an --agent-cmd holds the key of "+
		"--env ANTHROPIC_API_KEY, OPENAI_API_KEY or CODEX_API_KEY only: use a profile of --config with api: and base_url, or leave out --env %s", what, name)
}

// withheldWarnings say which model keys given to agent reach no command, and why.
func withheldWarnings(withheld []string, ag agent.Agent) []string {
	if len(withheld) == 0 {
		return nil
	}
	why := "its commands never get a model key"
	if r, ok := ag.(agent.ModelRouter); ok && r.ModelRoute() != nil {
		m := r.ModelRoute()
		why = fmt.Sprintf("the egress proxy holds one model key for the agent, $%s, whose placeholder the agent gets in $%s", m.KeyEnv, m.KeyVar)
	}
	return []string{fmt.Sprintf("%s: model keys held back from the agent, setup, verification and services: %s", strings.Join(withheld, ", "), why)}
}

// networkWarnings are what a run says at its start about networks that are not fenced.
func networkWarnings(box sandbox.Config, agentNet sandbox.Network) []string {
	var out []string
	if agentNet == sandbox.NetAllow || box.VerifyNetwork == sandbox.NetAllow {
		out = append(out, sandbox.AllowWarning)
	}
	if box.Mode != sandbox.Bubblewrap && (agentNet == sandbox.NetAllowlist || box.VerifyNetwork == sandbox.NetAllowlist) {
		out = append(out, "sandbox: none: network allowlist is not enforced without the sandbox (commands share this host's network); the egress proxy still holds the agent's model key")
	}
	return out
}

// resolveRepo turns --repo into what the engine clones: a URL as given, a local path made absolute,
// or, without --repo, the top of the git repository holding the current directory.
func resolveRepo(ctx context.Context, repo string) (string, error) {
	if isURL(repo) {
		return repo, nil
	}
	dir := repo
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--repo: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("--repo %s: %w", repo, err)
	}
	if repo != "" {
		return abs, nil
	}
	res, err := proc.Run(ctx, proc.Cmd{Args: []string{"git", "rev-parse", "--show-toplevel"}, Dir: abs,
		Env: proc.Environ(nil, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1"), Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		return "", errors.New("not inside a git repository: run akira in one, or give --repo PATH|URL")
	}
	return strings.TrimSpace(string(res.Output)), nil
}

func isURL(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	// scp-like syntax: git@github.com:owner/repo.git
	at, colon := strings.Index(s, "@"), strings.Index(s, ":")
	return at > 0 && colon > at && !strings.Contains(s[:colon], "/")
}

// gitAuthFromEnv lets `akira run` push to an https GitHub remote with a token from the environment
// (AKIRA_GITHUB_TOKEN, else GITHUB_TOKEN), passed to git as an http.extraheader through git's
// environment only. Other remotes use the user's ssh agent.
func gitAuthFromEnv(repo string) func(context.Context) (string, error) {
	u, err := url.Parse(repo)
	if err != nil || u.Scheme != "https" || u.User != nil {
		return nil
	}
	token := os.Getenv("AKIRA_GITHUB_TOKEN")
	if token == "" {
		token = os.Getenv("GITHUB_TOKEN")
	}
	if token == "" {
		return nil
	}
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))
	return func(context.Context) (string, error) { return header, nil }
}

// isTerminal reports whether r or w is an interactive terminal. Tests replace it to drive the
// interactive prompt without a TTY.
var isTerminal = func(f any) bool {
	file, ok := f.(*os.File)
	return ok && (isatty.IsTerminal(file.Fd()) || isatty.IsCygwinTerminal(file.Fd()))
}

// linePrompter asks on a terminal what to do with an escalated task.
type linePrompter struct {
	in  *bufio.Reader
	out io.Writer
}

// Decide shows the escalation and reads the answer. End of input parks the task.
func (p *linePrompter) Decide(ctx context.Context, esc runner.Escalation) (runner.Decision, error) {
	fmt.Fprintf(p.out, "\nTask %s (%s) needs a decision after %d attempt(s): %s\n", esc.TaskID, esc.Title, esc.Attempts, esc.Summary)
	for {
		fmt.Fprint(p.out, "[r]etry with guidance, [s]kip, [a]pprove the current work, [p]ark and continue, a[b]ort? ")
		line, err := p.readLine(ctx)
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(p.out)
			return runner.Decision{Kind: runner.DecisionPark}, nil
		}
		if err != nil {
			return runner.Decision{}, err
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "r", "retry":
			fmt.Fprint(p.out, "Guidance for the next attempt (one line, empty for none): ")
			g, err := p.readLine(ctx)
			if err != nil && !errors.Is(err, io.EOF) {
				return runner.Decision{}, err
			}
			return runner.Decision{Kind: runner.DecisionRetry, Guidance: strings.TrimSpace(g)}, nil
		case "s", "skip":
			return runner.Decision{Kind: runner.DecisionSkip}, nil
		case "a", "approve":
			return runner.Decision{Kind: runner.DecisionApprove}, nil
		case "p", "park":
			return runner.Decision{Kind: runner.DecisionPark}, nil
		case "b", "abort", "q", "quit":
			return runner.Decision{Kind: runner.DecisionAbort}, nil
		}
		fmt.Fprintln(p.out, "Please answer r, s, a, p or b.")
	}
}

// readLine reads one line, giving up when ctx ends (Ctrl-C while the prompt waits).
func (p *linePrompter) readLine(ctx context.Context) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := p.in.ReadString('\n')
		if err != nil && line != "" && errors.Is(err, io.EOF) {
			err = nil
		}
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		return strings.TrimRight(r.line, "\r\n"), r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// uncommittedPlan says, one line a file, which of the files a run reads (the roadmap, default
// ROADMAP.md, and .github/akira.yml) differ on disk from the repository's commits: the run works in a
// fresh clone and runs the committed ones, so a task added and not committed would silently not run.
// Nothing for a repository given by URL, or when git cannot tell.
func uncommittedPlan(ctx context.Context, repo, roadmapPath string) []string {
	if isURL(repo) {
		return nil
	}
	paths := []string{cmp.Or(roadmapPath, runner.DefaultRoadmap), ".github/akira.yml"}
	res, err := proc.Run(ctx, proc.Cmd{Args: append([]string{"git", "status", "--porcelain=v1", "--untracked-files=all", "--"}, paths...),
		Dir: repo, Env: proc.Environ(nil, "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1"), Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		return nil
	}
	var out []string
	for _, l := range strings.Split(strings.TrimRight(string(res.Output), "\n"), "\n") {
		if len(l) < 4 {
			continue
		}
		file := strings.Trim(l[3:], `"`)
		what := "has changes that are not committed"
		if strings.HasPrefix(l, "??") {
			what = "is not committed"
		}
		out = append(out, fmt.Sprintf("%s %s: akira run runs the committed one; commit it to run it", file, what))
	}
	return out
}
