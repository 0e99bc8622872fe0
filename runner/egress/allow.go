package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Presets are the hosts of each ecosystem's package registries, by the name an allowlist uses.
// Hosts are HTTPS (and HTTP) only: ports 443 and 80.
var Presets = map[string][]string{
	"go":     {"proxy.golang.org", "sum.golang.org", "index.golang.org", "go.dev", "dl.google.com"},
	"npm":    {"registry.npmjs.org", "registry.yarnpkg.com"},
	"pypi":   {"pypi.org", "files.pythonhosted.org"},
	"crates": {"crates.io", "index.crates.io", "static.crates.io", "static.rust-lang.org"},
	"debian": {"deb.debian.org", "security.debian.org"},
	"github": {"github.com", "api.github.com", "codeload.github.com", "*.githubusercontent.com"},
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// defaultPorts are the ports a host entry without a port allows.
var defaultPorts = []int{443, 80}

// hostRule allows a host name (or, with wildcard, every name below a domain) on some ports.
type hostRule struct {
	name     string // lowercased, without "*." for wildcards
	wildcard bool
	ports    []int
	entry    string // what the configuration said, for messages and metrics
}

// addrRule allows an address range on one port (0: any port). Only an address rule lets a
// connection reach a loopback, link-local, private or unique-local address.
type addrRule struct {
	prefix netip.Prefix
	port   int
	entry  string
}

// Allowlist is the set of destinations a sandboxed command may reach through the proxy. The zero
// value allows nothing.
type Allowlist struct {
	hosts []hostRule
	addrs []addrRule
	// entries are the normalised entries, for Entries and Within.
	entries []string
}

// ParseAllowlist reads allowlist entries: a preset name (go, npm, pypi, crates, debian, github), a
// host name (example.com), every name below a domain (*.example.com), an address (10.1.2.3,
// fd00::1) or a CIDR range (10.0.0.0/8), each optionally with a port (example.com:8443,
// 127.0.0.1:5000, [fd00::1]:443). A host without a port allows 443 and 80; an address without a
// port allows every port.
func ParseAllowlist(entries []string) (Allowlist, error) {
	var a Allowlist
	var errs []error
	for _, e := range entries {
		if err := a.add(e); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Allowlist{}, err
	}
	return a, nil
}

// MustAllowlist is ParseAllowlist for entries known to be valid (tests, built-in defaults).
func MustAllowlist(entries ...string) Allowlist {
	a, err := ParseAllowlist(entries)
	if err != nil {
		panic(err)
	}
	return a
}

func (a *Allowlist) add(raw string) error {
	e := strings.ToLower(strings.TrimSpace(raw))
	if e == "" {
		return errors.New("egress: empty allowlist entry")
	}
	if hosts, ok := Presets[e]; ok {
		for _, h := range hosts {
			if err := a.addHost(h, e); err != nil {
				return err
			}
		}
		a.entries = append(a.entries, e)
		return nil
	}
	if strings.Contains(e, "/") {
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return fmt.Errorf("egress: allowlist entry %q: not a CIDR range (%v)", raw, err)
		}
		a.addrs = append(a.addrs, addrRule{prefix: p.Masked(), entry: e})
		a.entries = append(a.entries, e)
		return nil
	}
	if ip, err := netip.ParseAddr(strings.Trim(e, "[]")); err == nil {
		ip = ip.Unmap()
		a.addrs = append(a.addrs, addrRule{prefix: netip.PrefixFrom(ip, ip.BitLen()), entry: e})
		a.entries = append(a.entries, e)
		return nil
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		ip := ap.Addr().Unmap()
		a.addrs = append(a.addrs, addrRule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: int(ap.Port()), entry: e})
		a.entries = append(a.entries, e)
		return nil
	}
	if err := a.addHost(e, e); err != nil {
		return fmt.Errorf("egress: allowlist entry %q: %w", raw, err)
	}
	a.entries = append(a.entries, e)
	return nil
}

func (a *Allowlist) addHost(e, entry string) error {
	name, ports := e, defaultPorts
	if h, p, err := net.SplitHostPort(e); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q is not a port number", p)
		}
		name, ports = h, []int{n}
	}
	wildcard := false
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		name, wildcard = rest, true
	}
	name = strings.TrimSuffix(name, ".")
	if !validName(name) {
		return fmt.Errorf("%q is not a preset (%s), a host name, *.domain, an address or a CIDR range", e, strings.Join(PresetNames(), ", "))
	}
	a.hosts = append(a.hosts, hostRule{name: name, wildcard: wildcard, ports: ports, entry: entry})
	return nil
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return false
			}
		}
	}
	return true
}

// Entries are the entries the allowlist was built from, normalised.
func (a Allowlist) Entries() []string { return slices.Clone(a.entries) }

// Merge returns the union of a and others.
func (a Allowlist) Merge(others ...Allowlist) Allowlist {
	out := Allowlist{hosts: slices.Clone(a.hosts), addrs: slices.Clone(a.addrs), entries: slices.Clone(a.entries)}
	for _, o := range others {
		out.hosts = append(out.hosts, o.hosts...)
		out.addrs = append(out.addrs, o.addrs...)
		for _, e := range o.entries {
			if !slices.Contains(out.entries, e) {
				out.entries = append(out.entries, e)
			}
		}
	}
	return out
}

// matchName reports whether a host name is allowed on a port, and the name to count it under:
// the host itself, or the pattern of a wildcard (which could otherwise count without bound).
func (a Allowlist) matchName(host string, port int) (string, bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, r := range a.hosts {
		if !slices.Contains(r.ports, port) {
			continue
		}
		if host == r.name && !r.wildcard {
			return host, true
		}
		if r.wildcard && strings.HasSuffix(host, "."+r.name) {
			return "*." + r.name, true
		}
	}
	return "", false
}

// matchAddr returns the address entry that allows ip on port.
func (a Allowlist) matchAddr(ip netip.Addr, port int) (string, bool) {
	ip = ip.Unmap()
	for _, r := range a.addrs {
		if r.prefix.Contains(ip) && (r.port == 0 || r.port == port) {
			return r.entry, true
		}
	}
	return "", false
}

// Within reports the entries of a that the ceiling does not cover: a repository may only ask for
// destinations the operator's ceiling already allows.
func (a Allowlist) Within(ceiling Allowlist) []string {
	var out []string
	for _, h := range a.hosts {
		ok := true
		for _, p := range h.ports {
			probe := h.name
			if h.wildcard {
				probe = "x." + h.name // a wildcard is covered only by a wildcard at or above it
			}
			if _, m := ceiling.matchName(probe, p); !m {
				ok = false
			}
			if h.wildcard && ok {
				ok = slices.ContainsFunc(ceiling.hosts, func(c hostRule) bool {
					return c.wildcard && slices.Contains(c.ports, p) && (c.name == h.name || strings.HasSuffix(h.name, "."+c.name))
				})
			}
		}
		if !ok && !slices.Contains(out, h.entry) {
			out = append(out, h.entry) // a preset is named once, by its name
		}
	}
	for _, r := range a.addrs {
		ok := slices.ContainsFunc(ceiling.addrs, func(c addrRule) bool {
			return c.prefix.Bits() <= r.prefix.Bits() && c.prefix.Contains(r.prefix.Addr()) && (c.port == 0 || c.port == r.port)
		})
		if !ok {
			out = append(out, r.entry)
		}
	}
	return out
}

// special names the kind of an address the proxy never connects to unless an address entry
// allows it: "" for an ordinary public address.
func special(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsPrivate() && ip.Is6():
		return "unique-local"
	case ip.IsPrivate():
		return "private"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, r := range reserved {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	return ""
}

// reserved are the other blocks of IANA's IPv4 and IPv6 special-purpose address registries (and
// the deprecated blocks they once held): none is the public internet a registry or a model lives
// on. The ranges that embed an IPv4 address (6to4, Teredo, NAT64, IPv4-compatible and -translated)
// are refused whole, since the address inside may be a private or loopback one and the host's
// routing may well deliver it there.
var reserved = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this-network"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (carrier-grade NAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignment"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (TEST-NET-1)"},
	{netip.MustParsePrefix("192.31.196.0/24"), "AS112"},
	{netip.MustParsePrefix("192.52.193.0/24"), "AMT"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("192.175.48.0/24"), "AS112"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (TEST-NET-2)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (TEST-NET-3)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (class E)"}, // holds 255.255.255.255, broadcast
	{netip.MustParsePrefix("::/96"), "IPv4-compatible"},
	{netip.MustParsePrefix("::ffff:0:0:0/96"), "IPv4-translated"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "NAT64 (local use)"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("100:0:0:1::/64"), "dummy prefix"},
	{netip.MustParsePrefix("2001::/32"), "Teredo"},
	{netip.MustParsePrefix("2001:20::/28"), "ORCHIDv2"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignment"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("2002::/16"), "6to4"},
	{netip.MustParsePrefix("2620:4f:8000::/48"), "AS112"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("5f00::/16"), "SRv6 SID"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

// Allows reports whether a connection to a host name (or address) on port is on the list; a name
// is judged by the list alone, before any lookup.
func (a Allowlist) Allows(host string, port int) bool {
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		_, ok := a.matchAddr(ip, port)
		return ok
	}
	_, ok := a.matchName(host, port)
	return ok
}
