package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/akira-bot/akira/app/admin"
)

// ErrLocal marks a handoff that failed before asking the server: the checkout, the plan file, git.
var ErrLocal = errors.New("handoff")

// HandoffOptions say what `akira handoff` hands off from a local checkout.
type HandoffOptions struct {
	// Dir is the checkout ("" for the working directory).
	Dir string
	// Plan is the plan file: one committed in the checkout is run from the branch (plan_path, any
	// format Akira reads); a markdown file with changes not committed is sent as text.
	Plan string
	// Repo ("owner/name") overrides the one read from Remote's URL.
	Repo string
	// Remote is the git remote that is the repository on GitHub ("origin" when empty).
	Remote string
	// Base overrides the branch the run starts from (the checkout's current branch); another branch
	// than the one checked out is never pushed, and a plan file then goes as text.
	Base string
	// NoPush leaves the branch alone: the run starts from what GitHub has.
	NoPush    bool
	Agent     string
	Budget    float64
	Reference string
	// Key is the Idempotency-Key; empty derives one from the repository, the branch's commit and the
	// plan, so that handing off the same thing twice (a retry after a network failure) starts one run.
	Key string
}

// Handed is what a handoff did.
type Handed struct {
	admin.StartResult
	Repo, Base string
	// Pushed says the branch was pushed first.
	Pushed bool
}

// Handoff starts a run of a plan from a local checkout: it pushes the current branch when GitHub
// does not have its commit, and starts the run on that branch. progress gets a line per step.
func (c *Client) Handoff(ctx context.Context, o HandoffOptions, progress io.Writer) (h Handed, err error) {
	asking := false
	defer func() {
		if err != nil && !asking {
			err = fmt.Errorf("%w: %w", ErrLocal, err)
		}
	}()
	g := git{dir: o.Dir}
	top, err := g.out(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return h, fmt.Errorf("not in a git checkout: %w", err)
	}
	g.dir = top
	remote := o.Remote
	if remote == "" {
		remote = "origin"
	}
	h.Repo = o.Repo
	if h.Repo == "" {
		u, err := g.out(ctx, "remote", "get-url", remote)
		if err != nil {
			return h, fmt.Errorf("remote %s: %w", remote, err)
		}
		if h.Repo = RepoOfURL(u); h.Repo == "" {
			return h, fmt.Errorf("cannot tell owner/name from remote %s (%s); give --repo owner/name", remote, u)
		}
	}
	current, _ := g.out(ctx, "symbolic-ref", "--short", "HEAD")
	h.Base = o.Base
	if h.Base == "" {
		if h.Base = current; current == "" {
			return h, errors.New("the checkout is not on a branch (detached HEAD); check out a branch or give --base")
		}
	}
	// Only the branch checked out is pushed, and only to itself: another base is run as GitHub has it.
	onBase := h.Base == current
	head, err := g.out(ctx, "rev-parse", "HEAD")
	if err != nil {
		return h, fmt.Errorf("%w", err)
	}

	body := admin.StartBody{Repository: h.Repo, Base: h.Base, Agent: o.Agent, Budget: o.Budget, Reference: o.Reference}
	abs, err := filepath.Abs(o.Plan)
	if err != nil {
		return h, fmt.Errorf("plan %s: %w", o.Plan, err)
	}
	rel, err := filepath.Rel(top, abs)
	inside := err == nil && !strings.HasPrefix(rel, "..")
	data, err := os.ReadFile(abs)
	if err != nil {
		return h, fmt.Errorf("plan: %w", err)
	}
	committed := false
	if inside {
		rel = filepath.ToSlash(rel)
		_, lerr := g.out(ctx, "ls-files", "--error-unmatch", "--", rel)
		_, derr := g.out(ctx, "diff", "--quiet", "HEAD", "--", rel)
		committed = lerr == nil && derr == nil && onBase
	}
	switch {
	case committed:
		body.PlanPath = rel
	case strings.EqualFold(filepath.Ext(abs), ".md") || strings.EqualFold(filepath.Ext(abs), ".markdown"):
		body.Plan = string(data)
	default:
		return h, fmt.Errorf("%s is not committed on %s (checked out): commit it there (a plan file of any format runs from the branch) or hand off a markdown plan", o.Plan, h.Base)
	}

	if !o.NoPush && onBase {
		remoteHead, err := g.out(ctx, "ls-remote", remote, "refs/heads/"+h.Base)
		if err != nil {
			return h, fmt.Errorf("ask %s for %s: %w", remote, h.Base, err)
		}
		if f := strings.Fields(remoteHead); len(f) == 0 || f[0] != head {
			fmt.Fprintf(progress, "pushing %s to %s\n", h.Base, remote)
			if _, err := g.out(ctx, "push", remote, "HEAD:refs/heads/"+h.Base); err != nil {
				return h, fmt.Errorf("push %s: %w", h.Base, err)
			}
			h.Pushed = true
		}
	}

	key := o.Key
	if key == "" {
		// Every field of the request is in the key: the server refuses a key sent with another request
		// (a --budget changed between two handoffs of the same commit is another run, not a repeat).
		fields, err := json.Marshal(body)
		if err != nil {
			return h, fmt.Errorf("handoff: %w", err)
		}
		sum := sha256.Sum256(append(append(fields, 0), head...))
		key = "handoff-" + hex.EncodeToString(sum[:16])
	}
	asking = true
	res, err := c.Start(ctx, body, key)
	if err != nil {
		return h, err
	}
	h.StartResult = res
	return h, nil
}

var (
	scpURL  = regexp.MustCompile(`^[^@/]+@[^:/]+:([^/]+/[^/]+?)(?:\.git)?/?$`)
	pathURL = regexp.MustCompile(`^[a-z+]+://[^/]+/([^/]+/[^/]+?)(?:\.git)?/?$`)
)

// RepoOfURL is the "owner/name" of a GitHub remote URL (https, ssh or scp-like), "" when it is not one.
func RepoOfURL(u string) string {
	u = strings.TrimSpace(u)
	for _, re := range []*regexp.Regexp{scpURL, pathURL} {
		if m := re.FindStringSubmatch(u); m != nil {
			return m[1]
		}
	}
	return ""
}

// git runs git in a checkout.
type git struct{ dir string }

func (g git) out(ctx context.Context, args ...string) (string, error) {
	full := args
	if g.dir != "" {
		full = append([]string{"-C", g.dir}, args...)
	}
	cmd := exec.CommandContext(ctx, "git", full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("git %s: %s", args[0], msg)
	}
	return strings.TrimSpace(stdout.String()), nil
}
