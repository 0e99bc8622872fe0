// Package config reads the two configuration files of Akira: the operator's file (AKIRA_CONFIG, which
// names agent profiles and their commands) and a repository's .github/akira.yml (which may only choose
// among what the operator defined).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
)

// Defaults shared by the CLI and the GitHub App.
const (
	DefaultRoadmap      = "ROADMAP.md"
	DefaultBranchPrefix = "akira/"
	DefaultMaxAttempts  = 3
)

// DefaultProtectedPaths are globs an agent must never change.
var DefaultProtectedPaths = []string{WorkflowPaths}

// DefaultSpecs are the spec-file globs a pull request may change to trigger a run.
var DefaultSpecs = []string{"specs/**/tasks.md", "**/tasks.md"}

// Duration is a time.Duration written as "30m" or "90s" in YAML.
type Duration time.Duration

// UnmarshalYAML accepts Go duration strings.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return fmt.Errorf("line %d: want a duration like 30m: %w", n.Line, err)
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return fmt.Errorf("line %d: %q is not a duration (want e.g. 30m, 90s)", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// MarshalYAML writes the duration back as a string.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// Price is the cost of a model in USD per million tokens, at the standard service tier.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
	// PerUse is the price of one use of a provider-side tool (web_search: 0.01), in USD, for the
	// server tools a profile allows (server_tools); over the providers' list prices
	// (egress.DefaultToolPrices).
	PerUse map[string]float64 `yaml:"per_use,omitempty" json:"per_use,omitempty"`
	// Tiers prices the model's tokens at service tiers other than the standard one (priority,
	// flex): a call that asks for a tier without a price here is refused.
	Tiers map[string]TierPrice `yaml:"tiers,omitempty" json:"tiers,omitempty"`
}

// TierPrice is the cost of a model at a service tier, in USD per million tokens.
type TierPrice struct {
	InputPerMTok  float64 `yaml:"input_per_mtok" json:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok" json:"output_per_mtok"`
}

// AgentProfile is one coding backend the operator allows.
type AgentProfile struct {
	// Kind is exec, openai or anthropic.
	Kind string `yaml:"kind"`
	// Command is the shell command of an exec agent.
	Command string `yaml:"command"`
	// UsageFrom reads an exec agent's usage from its output when it writes no $AKIRA_USAGE_FILE:
	// "claude-json" (Claude Code's --output-format json) or "codex-jsonl" (codex exec --json).
	UsageFrom string `yaml:"usage_from"`
	// Env names environment variables passed through to the agent (and nothing else is).
	Env     []string `yaml:"env"`
	Timeout Duration `yaml:"timeout"`
	// Model, BaseURL and APIKeyEnv configure the built-in agent. The key itself is read from the
	// environment variable APIKeyEnv names, never from a file or a flag.
	Model           string           `yaml:"model"`
	BaseURL         string           `yaml:"base_url"`
	APIKeyEnv       string           `yaml:"api_key_env"`
	MaxTurns        int              `yaml:"max_turns"`
	MaxTokens       int64            `yaml:"max_tokens"`
	MaxOutputTokens int              `yaml:"max_output_tokens"`
	MaxCost         float64          `yaml:"max_cost"`
	Prices          map[string]Price `yaml:"prices"`
	// CommandTimeout and OutputCap bound the built-in agent's run_command tool.
	CommandTimeout Duration `yaml:"command_timeout"`
	OutputCap      int      `yaml:"output_cap"`
	// Network is what the agent's commands may reach inside the sandbox: allowlist (the default:
	// the operator's allowlist through the egress proxy), none or allow (the host's whole network).
	Network string `yaml:"network"`
	// API, for an exec agent, is the wire protocol of its model (anthropic or openai): the egress
	// proxy then holds the real key (from api_key_env) and forwards the CLI's calls to base_url,
	// metering them; the CLI gets a placeholder in agent_key_env and the proxy's address in
	// agent_base_url_env (defaults: ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL, or OPENAI_API_KEY and
	// OPENAI_BASE_URL; Codex reads CODEX_API_KEY). Model and Prices price its tokens.
	API             string `yaml:"api"`
	AgentKeyEnv     string `yaml:"agent_key_env"`
	AgentBaseURLEnv string `yaml:"agent_base_url_env"`
	// APIPaths are calls ("POST /v1/messages/batches") the egress proxy's model route forwards
	// besides the ones it meters (egress.MeteredRoutes), for a CLI version that needs one; paths
	// are relative to base_url.
	APIPaths []string `yaml:"api_paths"`
	// ServerTools are the provider-side tools (web_search, web_fetch, ...: egress.KnownServerTools)
	// the egress proxy lets the CLI's calls use; it refuses any other. They run outside the sandbox,
	// past the egress allowlist, and most bill per use (priced by per_use in prices:).
	ServerTools []string `yaml:"server_tools"`
}

// Operator is the operator's configuration file.
type Operator struct {
	DefaultAgent string                  `yaml:"default_agent"`
	Agents       map[string]AgentProfile `yaml:"agents"`
	MaxAttempts  int                     `yaml:"max_attempts"`
	// MaxParallel is how many independent tasks ([P], or with declared dependencies) a run does at
	// once: the default and the ceiling (a repository may only lower it). Default 1.
	MaxParallel int `yaml:"max_parallel"`
	// VerifyTimeout bounds each verification command.
	VerifyTimeout Duration `yaml:"verify_timeout"`
	// AutoSetup runs the install command Akira detects from a repository's files (go.mod,
	// package.json and its lock file, ...) when the repository has no setup: of its own. Off by
	// default: the command is only proposed (akira init, the run's log).
	AutoSetup bool `yaml:"auto_setup"`
	// StallTimeout ends an attempt whose agent showed no output and changed no file for this long
	// (default 10m).
	StallTimeout Duration `yaml:"stall_timeout"`
	// Budget is each run's default budget; BudgetCeiling the most a repository's configuration or
	// `/akira run --budget` may give a run. Zero fields are no limit.
	Budget        Budget `yaml:"budget"`
	BudgetCeiling Budget `yaml:"budget_ceiling"`
	// Env names variables passed to verification commands besides the default allowlist.
	Env []string `yaml:"env"`
	// Prices extends the built-in price table for every profile.
	Prices map[string]Price `yaml:"prices"`
	// ProtectedPaths replaces the default protected globs when set.
	ProtectedPaths []string `yaml:"protected_paths"`
	// Sandbox confines the agent and the verification commands (see runner/sandbox).
	Sandbox Sandbox `yaml:"sandbox"`
	// Judge, when set, is the model that checks the work of tasks with acceptance criteria.
	Judge *JudgeProfile `yaml:"judge"`
	// Memory configures how lessons are found for a task.
	Memory Memory `yaml:"memory"`
	// Notify defines where notifications go (the App only).
	Notify Notify `yaml:"notify"`
	// CI is how runs watch their pull request's own CI (the App only; see CIFor).
	CI CI `yaml:"ci"`
	// Fair shares the workers between installations (the App only).
	Fair Fair `yaml:"fair"`
	// AllowWorkflows lets repositories allow changes to .github/workflows/** (`workflows: allow` in
	// their .github/akira.yml). For the App it also makes `akira setup` ask GitHub for the workflows
	// permission, without which GitHub refuses such pushes.
	AllowWorkflows bool `yaml:"allow_workflows"`
	// Commits is who makes the checkpoints: CommitsGit (default: Akira commits and pushes; through
	// GitHub's API where the base branch's rules require signed commits) or CommitsGitHub (always
	// through GitHub's API, so GitHub signs every checkpoint).
	Commits string `yaml:"commits"`
	// Spend caps what each installation's runs may cost in a month (the App only).
	Spend Spend `yaml:"spend"`
}

// Spend is the operator's monthly caps on what runs cost, per installation: a run does not start
// once its installation's month has reached its cap, and one running pauses at its next task.
type Spend struct {
	// MonthlyUSD is every installation's cap per month (UTC); 0: none.
	MonthlyUSD float64 `yaml:"monthly_usd"`
	// Installations caps these installations otherwise (by id), 0 meaning none for that one.
	Installations map[int64]float64 `yaml:"installations"`
}

// CapFor is installation's monthly cap in USD; 0 when it has none.
func (s Spend) CapFor(installation int64) float64 {
	if c, ok := s.Installations[installation]; ok {
		return c
	}
	return s.MonthlyUSD
}

func (s Spend) check() error {
	if s.MonthlyUSD < 0 {
		return fmt.Errorf("spend.monthly_usd: %v is negative", s.MonthlyUSD)
	}
	for id, c := range s.Installations {
		if c < 0 {
			return fmt.Errorf("spend.installations.%d: %v is negative", id, c)
		}
	}
	return nil
}

// Who makes the checkpoints (Operator.Commits).
const (
	CommitsGit    = "git"
	CommitsGitHub = "github"
)

// NotifyEvents are the events a notification is sent for.
var NotifyEvents = []string{"escalation", "run_finished", "run_failed", "budget_reached", "stalled", "spend_warning"}

// Notify is the operator's notification sinks and which events go to which by default.
type Notify struct {
	Sinks map[string]NotifySink `yaml:"sinks"`
	// Events routes each event to sinks by name; a repository's notify: replaces an event's list
	// with its own choice among the same sinks.
	Events map[string][]string `yaml:"events"`
	// RatePerMinute bounds what one sink is sent (default 30).
	RatePerMinute int `yaml:"rate_per_minute"`
}

// NotifySink is one destination. Webhook URLs are credentials: url_env names the variable that
// holds one (url is for URLs that are not secret, such as a private ntfy server's topic).
type NotifySink struct {
	Kind      string `yaml:"kind"`
	URL       string `yaml:"url"`
	URLEnv    string `yaml:"url_env"`
	TokenEnv  string `yaml:"token_env"`
	SecretEnv string `yaml:"secret_env"`
}

// JudgeProfile is the acceptance judge: a model behind the built-in OpenAI-compatible or Anthropic
// client. Its key is read from the environment variable APIKeyEnv names.
type JudgeProfile struct {
	Kind            string           `yaml:"kind"`
	Model           string           `yaml:"model"`
	BaseURL         string           `yaml:"base_url"`
	APIKeyEnv       string           `yaml:"api_key_env"`
	MaxOutputTokens int              `yaml:"max_output_tokens"`
	Timeout         Duration         `yaml:"timeout"`
	Prices          map[string]Price `yaml:"prices"`
	// MinConfidence is the confidence a verdict needs (default 0.8); a repository may raise it.
	MinConfidence float64 `yaml:"min_confidence"`
}

// Memory says how the lessons relevant to a task are found: by embedding similarity when an
// OpenAI-compatible embeddings endpoint is configured, else by keywords (BM25).
type Memory struct {
	Embeddings *EmbeddingsProfile `yaml:"embeddings"`
}

// EmbeddingsProfile is an OpenAI-compatible /embeddings endpoint.
type EmbeddingsProfile struct {
	Model     string `yaml:"model"`
	BaseURL   string `yaml:"base_url"`
	APIKeyEnv string `yaml:"api_key_env"`
	// MinSimilarity is the cosine similarity below which a lesson is not relevant (default 0.3).
	MinSimilarity float64 `yaml:"min_similarity"`
}

// Triggers says which GitHub events may start a run in a repository.
type Triggers struct {
	IssueComment bool `yaml:"issue_comment"`
	Push         bool `yaml:"push"`
	PullRequest  bool `yaml:"pull_request"`
	// Label is the issue label that starts a run when a writer adds it (default "akira"); assigning the
	// issue to the App's bot does too. Both are issue triggers: issue_comment: false turns them off.
	Label string `yaml:"label"`
}

// DefaultTriggerLabel is the label that starts a run on an issue.
const DefaultTriggerLabel = "akira"

// Repo is a repository's .github/akira.yml.
type Repo struct {
	Roadmap      string   `yaml:"roadmap"`
	Specs        []string `yaml:"specs"`
	BranchPrefix string   `yaml:"branch_prefix"`
	Agent        string   `yaml:"agent"`
	Verify       []string `yaml:"verify"`
	MaxAttempts  int      `yaml:"max_attempts"`
	// MaxParallel lowers the operator's max_parallel for this repository's runs (never raises it).
	MaxParallel    int      `yaml:"max_parallel"`
	Allowlist      []string `yaml:"allowlist"`
	ProtectedPaths []string `yaml:"protected_paths"`
	Triggers       Triggers `yaml:"triggers"`
	// Budget lowers the operator's budget for this repository's runs (it can never raise it).
	Budget Budget `yaml:"budget"`
	// Plan says what `/akira run` does on an issue without task checkboxes once Akira has written a
	// plan for it: PlanComment (default) posts the plan and waits for `/akira run`; PlanAuto runs it.
	Plan string `yaml:"plan"`
	// Memory is "on" (default: lessons from earlier runs reach prompts and new ones are kept) or "off".
	Memory string `yaml:"memory"`
	// MinConfidence raises the confidence the operator's acceptance judge needs (never lowers it).
	MinConfidence float64 `yaml:"min_confidence"`
	// Notify chooses, per event, which of the operator's sinks are told (never a URL of its own).
	Notify map[string][]string `yaml:"notify"`
	// CI is how this repository's runs watch its CI, within what the operator allows.
	CI CI `yaml:"ci"`
	// Network asks for more destinations for the sandbox's allowlist, within the operator's ceiling.
	Network RepoNetwork `yaml:"network"`
	// Setup runs once per run before the first task (see Setup).
	Setup Setup `yaml:"setup"`
	// Cache is how the agent and verification see the dependency cache that setup fills:
	// "read-only" (default), "read-write", or "off" (no cache).
	Cache string `yaml:"cache"`
	// Services start once per run after setup, for verification and the agent (see Service).
	Services Services `yaml:"services"`
	// Sync is "on" (default: a run merges its base when the base moves) or "off".
	Sync string `yaml:"sync"`
	// Workflows is "refuse" (default: a task that changes .github/workflows/** fails) or "allow",
	// which holds only where the operator enabled workflow changes for the App.
	Workflows string `yaml:"workflows"`
	// ownProtectedPaths: the file lists protected_paths itself (not the default list).
	ownProtectedPaths bool
}

// OwnProtectedPaths says the repository's file lists protected_paths of its own, rather than taking
// the default list: a workflow glob there is the repository's wish, which `workflows: allow` does not undo.
func (r Repo) OwnProtectedPaths() bool { return r.ownProtectedPaths }

// WorkflowPaths is the glob of GitHub Actions workflow files.
const WorkflowPaths = ".github/workflows/**"

// SyncOff says a repository turned base syncing off.
func (r Repo) SyncOff() bool { return r.Sync == "off" }

// AllowsWorkflows says a repository asks for workflow changes to be allowed.
func (r Repo) AllowsWorkflows() bool { return r.Workflows == "allow" }

// RepoNetwork is a repository's network: allow lists presets, hosts or addresses its runs need
// besides the operator's allowlist (only within the operator's sandbox.egress ceiling).
type RepoNetwork struct {
	Allow []string `yaml:"allow"`
}

// MemoryOff says a repository turned its memory off.
func (r Repo) MemoryOff() bool { return r.Memory == "off" }

// Budget limits what a run may spend: agent cost in USD, agent tokens (input and output), and the
// time its jobs work. A zero field is no limit.
type Budget struct {
	CostUSD  float64  `yaml:"cost_usd"`
	Tokens   int64    `yaml:"tokens"`
	WallTime Duration `yaml:"wall_time"`
}

// IsZero reports a budget without any limit.
func (b Budget) IsZero() bool { return b == Budget{} }

func (b Budget) check(key string) error {
	if b.CostUSD < 0 || b.Tokens < 0 || b.WallTime < 0 || b.CostUSD != b.CostUSD {
		return fmt.Errorf("%s: limits must not be negative", key)
	}
	return nil
}

// lower keeps the smaller limit of each field; an unset field takes the other's.
func lower(a, b Budget) Budget {
	pick := func(x, y float64) float64 {
		switch {
		case x == 0:
			return y
		case y == 0:
			return x
		}
		return min(x, y)
	}
	return Budget{CostUSD: pick(a.CostUSD, b.CostUSD), Tokens: int64(pick(float64(a.Tokens), float64(b.Tokens))),
		WallTime: Duration(pick(float64(a.WallTime), float64(b.WallTime)))}
}

// BudgetFor is a run's budget: the operator's, lowered by the repository's.
func (o Operator) BudgetFor(r Repo) Budget { return lower(o.Budget, r.Budget) }

// RaiseCost is the cost limit a person asks for with `/akira run --budget <usd>`, cut at the
// operator's ceiling (when there is one); ok says it was not cut.
func (o Operator) RaiseCost(usd float64) (float64, bool) {
	if c := o.BudgetCeiling.CostUSD; c > 0 && usd > c {
		return c, false
	}
	return usd, true
}

// What `plan:` may say.
const (
	PlanComment = "comment"
	PlanAuto    = "auto"
)

// DefaultRepo is the configuration of a repository without .github/akira.yml.
func DefaultRepo() Repo {
	return Repo{
		Roadmap:        DefaultRoadmap,
		Specs:          append([]string(nil), DefaultSpecs...),
		BranchPrefix:   DefaultBranchPrefix,
		ProtectedPaths: append([]string(nil), DefaultProtectedPaths...),
		Triggers:       Triggers{IssueComment: true, Push: true, PullRequest: true, Label: DefaultTriggerLabel},
		Plan:           PlanComment,
	}
}

// ParseRepo parses .github/akira.yml over the defaults. Unknown keys and bad values are errors that
// name the key and the line, because the error is posted where the repository's users will read it.
func ParseRepo(data []byte) (Repo, error) {
	r := DefaultRepo()
	if len(bytes.TrimSpace(data)) == 0 {
		return r, nil
	}
	if err := decodeStrict(data, &r); err != nil {
		return Repo{}, fmt.Errorf(".github/akira.yml: %w", err)
	}
	var keys map[string]any
	if yaml.Unmarshal(data, &keys) == nil {
		_, r.ownProtectedPaths = keys["protected_paths"]
	}
	var errs []error
	if r.Roadmap == "" {
		r.Roadmap = DefaultRoadmap
	}
	if err := checkRepoPath("roadmap", r.Roadmap); err != nil {
		errs = append(errs, err)
	}
	for _, g := range r.Specs {
		if err := checkGlob("specs", g); err != nil {
			errs = append(errs, err)
		}
	}
	for _, g := range r.ProtectedPaths {
		if err := checkGlob("protected_paths", g); err != nil {
			errs = append(errs, err)
		}
	}
	if r.BranchPrefix == "" {
		r.BranchPrefix = DefaultBranchPrefix
	}
	if strings.ContainsAny(r.BranchPrefix, " ~^:?*[\\") || strings.Contains(r.BranchPrefix, "..") {
		errs = append(errs, fmt.Errorf("branch_prefix: %q is not a valid git branch prefix", r.BranchPrefix))
	}
	if r.Memory != "" && r.Memory != "on" && r.Memory != "off" {
		errs = append(errs, fmt.Errorf("memory: %q: want on or off", r.Memory))
	}
	if r.Plan != PlanComment && r.Plan != PlanAuto {
		errs = append(errs, fmt.Errorf("plan: %q is not %q or %q", r.Plan, PlanComment, PlanAuto))
	}
	if r.MaxParallel < 0 || r.MaxParallel > 32 {
		errs = append(errs, fmt.Errorf("max_parallel: %d is out of range (1 to 32)", r.MaxParallel))
	}
	if r.MaxAttempts < 0 || r.MaxAttempts > 10 {
		errs = append(errs, fmt.Errorf("max_attempts: %d is out of range (1 to 10)", r.MaxAttempts))
	}
	if r.MinConfidence < 0 || r.MinConfidence > 1 {
		errs = append(errs, fmt.Errorf("min_confidence: %g is not between 0 and 1", r.MinConfidence))
	}
	if err := r.Budget.check("budget"); err != nil {
		errs = append(errs, err)
	}
	if err := r.CI.check("ci"); err != nil {
		errs = append(errs, err)
	}
	for _, v := range r.Verify {
		if strings.TrimSpace(v) == "" {
			errs = append(errs, errors.New("verify: empty command"))
		}
	}
	if err := r.Setup.check(); err != nil {
		errs = append(errs, err)
	}
	if err := r.Services.check(); err != nil {
		errs = append(errs, err)
	}
	switch r.Cache {
	case "", "read-only", "read-write", "off":
	default:
		errs = append(errs, fmt.Errorf("cache: %q: want read-only, read-write or off", r.Cache))
	}
	if r.Sync != "" && r.Sync != "on" && r.Sync != "off" {
		errs = append(errs, fmt.Errorf("sync: %q: want on or off", r.Sync))
	}
	if r.Workflows != "" && r.Workflows != "refuse" && r.Workflows != "allow" {
		errs = append(errs, fmt.Errorf("workflows: %q: want refuse or allow", r.Workflows))
	}
	if err := errors.Join(errs...); err != nil {
		return Repo{}, fmt.Errorf(".github/akira.yml: %w", err)
	}
	return r, nil
}

// Allowed reports whether login is on the repository's allowlist (case-insensitive, as GitHub logins are).
func (r Repo) Allowed(login string) bool {
	for _, a := range r.Allowlist {
		if strings.EqualFold(strings.TrimPrefix(a, "@"), login) {
			return true
		}
	}
	return false
}

// LoadOperator reads the operator's file. An empty path yields a configuration with one exec profile
// named "exec" and no command, which a caller must fill (akira run --agent-cmd).
func LoadOperator(file string) (Operator, error) {
	if file == "" {
		return DefaultOperator(), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return Operator{}, fmt.Errorf("config: %w", err)
	}
	op, err := ParseOperator(data)
	if err != nil {
		return Operator{}, fmt.Errorf("config %s: %w", file, err)
	}
	return op, nil
}

// DefaultOperator is the configuration used without a file.
func DefaultOperator() Operator {
	return Operator{MaxAttempts: DefaultMaxAttempts, Agents: map[string]AgentProfile{}}
}

// ParseOperator parses and validates the operator's file.
func ParseOperator(data []byte) (Operator, error) {
	op := DefaultOperator()
	if err := decodeStrict(data, &op); err != nil {
		return Operator{}, err
	}
	if op.Agents == nil {
		op.Agents = map[string]AgentProfile{}
	}
	if op.MaxAttempts == 0 {
		op.MaxAttempts = DefaultMaxAttempts
	}
	var errs []error
	if op.MaxAttempts < 1 || op.MaxAttempts > 10 {
		errs = append(errs, fmt.Errorf("max_attempts: %d is out of range (1 to 10)", op.MaxAttempts))
	}
	if op.MaxParallel < 0 || op.MaxParallel > 32 {
		errs = append(errs, fmt.Errorf("max_parallel: %d is out of range (1 to 32)", op.MaxParallel))
	}
	for key, b := range map[string]Budget{"budget": op.Budget, "budget_ceiling": op.BudgetCeiling} {
		if err := b.check(key); err != nil {
			errs = append(errs, err)
		}
	}
	if err := op.Sandbox.validate(); err != nil {
		errs = append(errs, err)
	}
	if err := op.CI.check("ci"); err != nil {
		errs = append(errs, err)
	}
	if err := op.Spend.check(); err != nil {
		errs = append(errs, err)
	}
	if op.Commits != "" && op.Commits != CommitsGit && op.Commits != CommitsGitHub {
		errs = append(errs, fmt.Errorf("commits: %q: want %s or %s", op.Commits, CommitsGit, CommitsGitHub))
	}
	errs = append(errs, op.Fair.check("fair")...)
	if j := op.Judge; j != nil {
		if err := j.validate(); err != nil {
			errs = append(errs, fmt.Errorf("judge: %w", err))
		}
	}
	errs = append(errs, op.Notify.validate()...)
	errs = append(errs, checkPrices("prices", op.Prices)...)
	if j := op.Judge; j != nil {
		errs = append(errs, checkPrices("judge.prices", j.Prices)...)
	}
	for _, name := range op.AgentNames() {
		errs = append(errs, checkPrices("agents."+name+".prices", op.Agents[name].Prices)...)
	}
	if e := op.Memory.Embeddings; e != nil {
		if err := e.validate(); err != nil {
			errs = append(errs, fmt.Errorf("memory.embeddings: %w", err))
		}
	}
	keys := op.ModelKeyVars()
	for _, name := range op.AgentNames() {
		var profileErrs []error
		if err := op.Agents[name].validate(); err != nil {
			profileErrs = []error{err}
		} else {
			profileErrs = op.Agents[name].checkModelKeys(keys)
		}
		for _, err := range profileErrs {
			errs = append(errs, fmt.Errorf("agents.%s: %w", name, err))
		}
	}
	errs = append(errs, checkVerifyEnv(op.Env, keys)...)
	if op.DefaultAgent != "" {
		if _, ok := op.Agents[op.DefaultAgent]; !ok {
			errs = append(errs, fmt.Errorf("default_agent: %q is not one of the agents (%s)", op.DefaultAgent, strings.Join(op.AgentNames(), ", ")))
		}
	}
	return op, errors.Join(errs...)
}

func (p AgentProfile) validate() error {
	switch p.Kind {
	case "exec":
		if strings.TrimSpace(p.Command) == "" {
			return errors.New("command: required for kind exec")
		}
		switch p.UsageFrom {
		case "", "claude-json", "codex-jsonl":
		default:
			return fmt.Errorf("usage_from: %q is not claude-json or codex-jsonl", p.UsageFrom)
		}
		if _, ok := modelAPIs[p.API]; p.API != "" && !ok {
			return fmt.Errorf("api: %q is not anthropic or openai", p.API)
		}
		if len(p.APIPaths) > 0 && p.API == "" {
			return errors.New("api_paths: needs api (anthropic or openai): the paths are those of the model route the egress proxy holds")
		}
		if _, err := egress.ParseRoutes(p.APIPaths); err != nil {
			return fmt.Errorf("api_paths: %w", err)
		}
		if len(p.ServerTools) > 0 && p.API == "" {
			return errors.New("server_tools: needs api (anthropic or openai): the egress proxy lets them through on the model route it holds")
		}
		if err := egress.CheckServerTools(p.API, p.ServerTools); err != nil {
			return fmt.Errorf("server_tools: %w", err)
		}
		if err := checkURL(p.BaseURL); err != nil {
			return err
		}
	case "openai", "anthropic":
		if p.Model == "" {
			return fmt.Errorf("model: required for kind %s", p.Kind)
		}
		if len(p.ServerTools) > 0 {
			return errors.New("server_tools: only for kind exec with api: the built-in agent offers its model no provider-side tool")
		}
		if p.BaseURL != "" && !strings.HasPrefix(p.BaseURL, "http://") && !strings.HasPrefix(p.BaseURL, "https://") {
			return fmt.Errorf("base_url: %q is not an http(s) URL", p.BaseURL)
		}
	case "":
		return errors.New("kind: required (exec, openai or anthropic)")
	default:
		return fmt.Errorf("kind: %q is not exec, openai or anthropic", p.Kind)
	}
	if _, err := sandbox.ParseNetwork(p.Network, sandbox.NetNone); err != nil {
		return fmt.Errorf("network: %q: want allowlist, none or allow", p.Network)
	}
	if p.MaxTurns < 0 || p.MaxTokens < 0 || p.MaxCost < 0 || p.OutputCap < 0 || p.MaxOutputTokens < 0 {
		return errors.New("max_turns, max_tokens, max_output_tokens, max_cost and output_cap must not be negative")
	}
	return nil
}

// MinConfidence is the confidence the operator's judge needs (0 when there is no judge, which the
// engine reads as its default).
func (o Operator) MinConfidence() float64 {
	if o.Judge == nil {
		return 0
	}
	return o.Judge.MinConfidence
}

func (j *JudgeProfile) validate() error {
	var errs []error
	if j.Kind != "openai" && j.Kind != "anthropic" {
		errs = append(errs, fmt.Errorf("kind: %q is not openai or anthropic", j.Kind))
	}
	if strings.TrimSpace(j.Model) == "" {
		errs = append(errs, errors.New("model: required"))
	}
	if err := checkURL(j.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if j.MinConfidence < 0 || j.MinConfidence > 1 {
		errs = append(errs, fmt.Errorf("min_confidence: %g is not between 0 and 1", j.MinConfidence))
	}
	if j.MaxOutputTokens < 0 {
		errs = append(errs, errors.New("max_output_tokens: must not be negative"))
	}
	return errors.Join(errs...)
}

func (e *EmbeddingsProfile) validate() error {
	var errs []error
	if strings.TrimSpace(e.Model) == "" {
		errs = append(errs, errors.New("model: required"))
	}
	if err := checkURL(e.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if e.MinSimilarity < 0 || e.MinSimilarity > 1 {
		errs = append(errs, fmt.Errorf("min_similarity: %g is not between 0 and 1", e.MinSimilarity))
	}
	return errors.Join(errs...)
}

func (n Notify) validate() []error {
	var errs []error
	for name, s := range n.Sinks {
		switch s.Kind {
		case "slack", "discord", "ntfy", "webhook":
		default:
			errs = append(errs, fmt.Errorf("notify.sinks.%s: kind: %q is not slack, discord, ntfy or webhook", name, s.Kind))
		}
		if (s.URL == "") == (s.URLEnv == "") {
			errs = append(errs, fmt.Errorf("notify.sinks.%s: give one of url and url_env", name))
		}
		if s.Kind == "webhook" && s.SecretEnv == "" {
			errs = append(errs, fmt.Errorf("notify.sinks.%s: secret_env: required for kind webhook (its deliveries are signed)", name))
		}
	}
	errs = append(errs, checkRouting("notify.events", n.Events, n.Sinks)...)
	if n.RatePerMinute < 0 {
		errs = append(errs, errors.New("notify.rate_per_minute: must not be negative"))
	}
	return errs
}

// checkRouting checks that every event is one Akira sends and every sink one the operator defined.
func checkRouting(key string, routes map[string][]string, sinks map[string]NotifySink) []error {
	var errs []error
	for ev, names := range routes {
		if !slices.Contains(NotifyEvents, ev) {
			errs = append(errs, fmt.Errorf("%s: %q is not an event (%s)", key, ev, strings.Join(NotifyEvents, ", ")))
		}
		for _, n := range names {
			if _, ok := sinks[n]; !ok {
				errs = append(errs, fmt.Errorf("%s.%s: %q is not one of the operator's sinks", key, ev, n))
			}
		}
	}
	return errs
}

// NotifyRoute is the sinks an event of a repository goes to: the repository's choice for the event
// when it made one (only among the operator's sinks), else the operator's.
func (o Operator) NotifyRoute(r map[string][]string, event string) []string {
	if names, ok := r[event]; ok {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { _, ok := o.Notify.Sinks[n]; return !ok })
	}
	return o.Notify.Events[event]
}

func checkURL(u string) error {
	if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return fmt.Errorf("base_url: %q is not an http(s) URL", u)
	}
	return nil
}

// AgentNames lists the profile names, sorted.
func (o Operator) AgentNames() []string {
	names := make([]string, 0, len(o.Agents))
	for n := range o.Agents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Agent returns the profile a repository asked for (or the default one), its prices over the
// operator's (PriceTable). A repository may only choose among the operator's profiles: that is what
// keeps the commands an agent runs in the operator's hands.
func (o Operator) Agent(name string) (string, AgentProfile, error) {
	if name == "" {
		name = o.DefaultAgent
	}
	if name == "" {
		if len(o.Agents) == 1 {
			name = o.AgentNames()[0]
		} else {
			return "", AgentProfile{}, fmt.Errorf("no agent chosen: set default_agent (profiles: %s)", strings.Join(o.AgentNames(), ", "))
		}
	}
	p, ok := o.Agents[name]
	if !ok {
		return "", AgentProfile{}, fmt.Errorf("agent %q is not one of the profiles the operator defined (%s)", name, strings.Join(o.AgentNames(), ", "))
	}
	p.Prices = o.PriceTable(p.Prices)
	return name, p, nil
}

// ValidateRepo checks the choices a repository's file makes against the operator's.
func (o Operator) ValidateRepo(r Repo) error {
	if errs := checkRouting("notify", r.Notify, o.Notify.Sinks); len(errs) > 0 {
		return fmt.Errorf(".github/akira.yml: %w", errors.Join(errs...))
	}
	if _, err := o.RepoEgress(r); err != nil {
		return fmt.Errorf(".github/akira.yml: %w", err)
	}
	if r.Agent == "" {
		return nil
	}
	if _, _, err := o.Agent(r.Agent); err != nil {
		return fmt.Errorf(".github/akira.yml: agent: %w", err)
	}
	return nil
}

// MaxAttemptsFor is the repository's max_attempts when set, else the operator's.
// MaxParallelFor is how many tasks a repository's run does at once: the operator's max_parallel
// (default 1), lowered by the repository's.
func (o Operator) MaxParallelFor(r Repo) int {
	n := max(o.MaxParallel, 1)
	if r.MaxParallel > 0 && r.MaxParallel < n {
		n = r.MaxParallel
	}
	return n
}

func (o Operator) MaxAttemptsFor(r Repo) int {
	if r.MaxAttempts > 0 {
		return r.MaxAttempts
	}
	if o.MaxAttempts > 0 {
		return o.MaxAttempts
	}
	return DefaultMaxAttempts
}

func decodeStrict(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return fmt.Errorf("%s", strings.Join(cleanYAMLErrors(te.Errors), "; "))
		}
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return nil
}

// cleanYAMLErrors turns "line 3: field agnet not found in type config.Repo" into
// "line 3: unknown key \"agnet\"", which is what a user can act on.
func cleanYAMLErrors(errs []string) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		if m := unknownField.FindStringSubmatch(e); m != nil {
			out[i] = fmt.Sprintf("%s: unknown key %q", m[1], m[2])
			continue
		}
		out[i] = e
	}
	return out
}

var unknownField = regexp.MustCompile(`^(line \d+): field (\S+) not found in type `)

func checkRepoPath(key, p string) error {
	if p == "" || path.IsAbs(p) || strings.HasPrefix(path.Clean(p), "..") || strings.Contains(p, "\\") {
		return fmt.Errorf("%s: %q must be a relative path inside the repository", key, p)
	}
	return nil
}

func checkGlob(key, g string) error {
	if err := checkRepoPath(key, g); err != nil {
		return err
	}
	if _, err := path.Match(strings.ReplaceAll(g, "**", "*"), ""); err != nil {
		return fmt.Errorf("%s: %q is not a valid glob: %w", key, g, err)
	}
	return nil
}

// MatchGlob reports whether a slash-separated repository path matches a glob where * matches within
// a path segment and ** matches any number of segments.
func MatchGlob(glob, name string) bool {
	return matchSegments(strings.Split(glob, "/"), strings.Split(name, "/"))
}

func matchSegments(g, n []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for i := 0; i <= len(n); i++ {
				if matchSegments(g[1:], n[i:]) {
					return true
				}
			}
			return false
		}
		if len(n) == 0 {
			return false
		}
		if ok, _ := path.Match(g[0], n[0]); !ok {
			return false
		}
		g, n = g[1:], n[1:]
	}
	return len(n) == 0
}

// MatchAny reports whether name matches one of globs.
func MatchAny(globs []string, name string) bool {
	for _, g := range globs {
		if MatchGlob(g, name) {
			return true
		}
	}
	return false
}
