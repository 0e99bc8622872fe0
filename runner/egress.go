package runner

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/runner/agent"
	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/egress"
	"github.com/akira-bot/akira/runner/sandbox"
	"github.com/akira-bot/akira/runner/timeline"
)

// withRepoEgress adds what a repository's .github/akira.yml asks for to the run's allowlist, when
// the operator's ceiling allows it.
func withRepoEgress(cfg *sandbox.Config, r config.Repo) error {
	if len(r.Network.Allow) == 0 {
		return nil
	}
	asked, err := egress.ParseAllowlist(r.Network.Allow)
	if err != nil {
		return fmt.Errorf("network.allow: %w", err)
	}
	if out := asked.Within(cfg.Ceiling.Merge(cfg.Allow)); len(out) > 0 {
		return fmt.Errorf("network.allow: %s: not within what the operator allows repositories to ask for (sandbox.egress.allow and sandbox.egress.ceiling)", strings.Join(out, ", "))
	}
	cfg.Allow = cfg.Allow.Merge(asked)
	return nil
}

// modelOf is the model endpoint the egress proxy holds for an agent, nil for none.
func modelOf(a agent.Agent) *egress.Model {
	if r, ok := a.(agent.ModelRouter); ok {
		return r.ModelRoute()
	}
	return nil
}

// withModelKeys is cfg withholding, besides what its caller said, the providers' model keys
// (config.KnownModelKeyVars) and their values in this process's environment from every command: a
// caller that did not say which keys it holds still never hands one on.
func withModelKeys(cfg sandbox.Config) sandbox.Config {
	known := sandbox.Withheld{Names: config.KnownModelKeyVars}
	for _, n := range config.KnownModelKeyVars {
		known.Values = append(known.Values, os.Getenv(n))
	}
	cfg.Withhold = cfg.Withhold.Merge(known)
	return cfg
}

// egressPolicy is the sandbox policy of commands that may reach net, with the egress session that
// is their route out (nil when they need none: network none, or no proxy). model, when set, is
// held by the session; maxCost bounds what its model calls may cost; record, when set, is told its
// model calls and refusals for the attempt's timeline. The caller closes the session.
func egressPolicy(cfg sandbox.Config, net sandbox.Network, workTree, gitDir, home string, model *egress.Model, maxCost float64,
	record func(timeline.Event)) (*sandbox.Policy, *egress.Session, error) {
	p := cfg.Policy(net, workTree, gitDir, home)
	if cfg.Egress == nil || net == sandbox.NetNone {
		return p, nil, nil
	}
	if model == nil && (net == sandbox.NetAllow || p.Mode != sandbox.Bubblewrap) {
		// The host's network and no key to hold: a proxy only well-behaved clients use would fence
		// nothing, and would break what the operator chose to leave open.
		return p, nil, nil
	}
	allow := cfg.Allow
	if model != nil {
		// The profile's model host: the CLI may call it besides its base URL (it holds no real key).
		if h := model.Host(); h != "" {
			if _, err := netip.ParseAddr(h); err != nil {
				if a, err := egress.ParseAllowlist([]string{h}); err == nil {
					allow = allow.Merge(a)
				}
			}
		}
	}
	// A command that shares the host's network (mode none, network allow) reaches its session on a
	// loopback port; a sandboxed one through the socket bound into its namespace.
	tcp := p.Mode != sandbox.Bubblewrap || net == sandbox.NetAllow
	sess, err := cfg.Egress.Open(egress.SessionConfig{Allow: allow, Model: model, MaxCostUSD: maxCost, TCP: tcp, Record: record})
	if err != nil {
		return nil, nil, fmt.Errorf("runner: %w", err)
	}
	e := &sandbox.Egress{Socket: sess.Socket(), Env: sess.Env()}
	if !tcp {
		// This executable links runner/egress, which makes it the forwarder too.
		if e.Forwarder, err = os.Executable(); err != nil {
			sess.Close()
			return nil, nil, fmt.Errorf("runner: the egress forwarder: %w", err)
		}
	}
	if model != nil && model.KeyEnv != "" {
		e.Strip = []string{model.KeyEnv}
	}
	p.Egress = e
	return p, sess, nil
}

// meteredUsage is the usage of an attempt: for an agent whose model calls go through the proxy
// (routed), only what the proxy measured, priced with Akira's table, however much the agent says
// of itself. A CLI's own cost figure is its price for the model it chose, and the agent may write
// anything in its usage file. Other agents have nothing but what they say.
func meteredUsage(said agent.Usage, r egress.Report, routed bool) agent.Usage {
	if !routed {
		return said
	}
	return agent.Usage{InputTokens: r.Tokens.Input, OutputTokens: r.Tokens.Output, CostUSD: r.CostUSD, Estimated: r.Estimated}
}

// AllowLine is the configuration that would let a refused destination through: the repository's
// network.allow for a host name (within the operator's ceiling), the operator's
// sandbox.egress.allow for an address, which a repository can never ask for.
//
// A call the model route refused is allowed only by the operator, in the agent's profile, and only
// when its path is a plain one (not one of the spellings the route resolves before it decides).
func AllowLine(b egress.Blocked) string {
	if b.Fix != "" {
		return b.Fix // the proxy knew better: a call refused for what its body asked
	}
	if b.Path != "" {
		route := b.Method + " " + b.Path
		_, err := egress.ParseRoutes([]string{route})
		switch {
		case b.Reason == egress.ReasonUnmetered && err == nil:
			return fmt.Sprintf("api_paths: [%q] in the agent's profile, in the operator's config (for a call whose cost the proxy meters)", route)
		case b.Reason == egress.ReasonUnmetered || b.Reason == egress.ReasonOffRoute:
			return "nothing: the model route forwards plain paths only"
		default:
			return "nothing: the model route forwards only what it can meter"
		}
	}
	entry := b.Host
	if _, err := netip.ParseAddr(b.Host); err == nil {
		return fmt.Sprintf("sandbox.egress.allow: [%q] in the operator's config", net.JoinHostPort(b.Host, strconv.Itoa(b.Port)))
	}
	if b.Port != 443 && b.Port != 80 {
		entry = net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
	}
	return fmt.Sprintf("network: {allow: [%q]} in .github/akira.yml", entry)
}

// budgetCanBind says why a cost budget could not bind the agent: its model has no price (its
// calls would be recorded at $0), or it names no model at all (its CLI runs one of its own).
func budgetCanBind(a agent.Agent, b Budget) error {
	p, ok := a.(agent.Priced)
	if !ok || b.CostUSD <= 0 {
		return nil
	}
	switch model, priced := p.Price(); {
	case priced:
		return nil
	case model == "":
		return fmt.Errorf("the run has a cost budget ($%.2f) but the agent names no model: set model: in its profile, so that Akira tells the CLI which to run and prices its calls", b.CostUSD)
	default:
		return fmt.Errorf("the run has a cost budget ($%.2f) but the agent's model %q has no price, so its calls would be recorded at $0: add it to prices: in the operator's configuration", b.CostUSD, model)
	}
}
