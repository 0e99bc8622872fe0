package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/akira-bot/akira/runner/egress"
)

// A listed name that resolves into a special-purpose block of IANA's registries is refused before
// any connection: documentation and benchmarking ranges, the ranges that embed an IPv4 address
// (6to4, Teredo, NAT64), carrier-grade NAT, class E and broadcast, discard-only, ORCHIDv2.
func TestSpecialPurposeAddressesRefused(t *testing.T) {
	tests := []struct {
		addr, kind string
	}{
		{"192.0.2.10", "documentation (TEST-NET-1)"},
		{"198.51.100.7", "documentation (TEST-NET-2)"},
		{"203.0.113.200", "documentation (TEST-NET-3)"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.254", "benchmarking"},
		{"100.64.0.1", "shared (carrier-grade NAT)"},
		{"240.0.0.1", "reserved (class E)"},
		{"255.255.255.255", "reserved (class E)"},
		{"239.1.2.3", "multicast"},
		{"192.88.99.1", "6to4 relay anycast"},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", "Teredo"},
		{"2002:a00:1::1", "6to4"},       // embeds 10.0.0.1
		{"2002:7f00:1::1", "6to4"},      // embeds 127.0.0.1
		{"64:ff9b::a9fe:a9fe", "NAT64"}, // embeds 169.254.169.254
		{"64:ff9b::808:808", "NAT64"},
		{"100::1", "discard-only"},
		{"2001:20::1", "ORCHIDv2"},
		{"2001:2::1", "IETF protocol assignment"},
		{"2001:db8::1", "documentation"},
		{"3fff::1", "documentation"},
		{"::ffff:0:a00:1", "IPv4-translated"},
		{"ff02::1", "link-local"},
		{"ff0e::1", "multicast"},
		{"fec0::1", "site-local"},
	}
	names := fixedResolver{}
	var allow []string
	for i, tt := range tests {
		name := "n" + strconv.Itoa(i) + ".example"
		names[name] = tt.addr
		allow = append(allow, name)
	}
	// Were a range let through, the proxy would dial it: the test's dialer records the attempt and
	// fails it, so that no packet leaves for an address of someone else's.
	dials := &refusingDialer{}
	p := egress.New(egress.Config{Resolver: names, Dialer: dials})
	s, err := p.Open(egress.SessionConfig{TCP: true, Allow: egress.MustAllowlist(allow...)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c := proxied(t, s)
	for i, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			name := "n" + strconv.Itoa(i) + ".example"
			resp, err := c.Get("http://" + name + "/")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Akira-Egress") != "refused" {
				t.Errorf("%s (%s): %d, want the proxy's 403", name, tt.addr, resp.StatusCode)
			}
		})
	}
	if got := dials.Seen(); len(got) > 0 {
		t.Errorf("the proxy dialed %v", got)
	}
	reasons := map[string]string{}
	for _, b := range s.Report().Blocked {
		reasons[b.Host] = b.Reason
	}
	for i, tt := range tests {
		name := "n" + strconv.Itoa(i) + ".example"
		if want := "resolves to " + tt.kind + " address "; !strings.HasPrefix(reasons[name], want) {
			t.Errorf("%s (%s): reason %q, want %q…", name, tt.addr, reasons[name], want)
		}
	}
}

// refusingDialer records the addresses the proxy tried to connect to and connects to none.
type refusingDialer struct {
	mu   sync.Mutex
	seen []string
}

func (d *refusingDialer) DialContext(_ context.Context, _, addr string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seen = append(d.seen, addr)
	return nil, errors.New("the test dials nothing")
}

func (d *refusingDialer) Seen() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

// The session's socket sits in a directory other processes may list: its name must tell nothing of
// the placeholder key, which is the only thing that lets a request onto the model route.
func TestSocketNameIsNotTheKey(t *testing.T) {
	p := egress.New(egress.Config{Dir: t.TempDir()})
	for range 3 {
		s, err := p.Open(egress.SessionConfig{Allow: egress.MustAllowlist("example.com")})
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(s.Socket())
		secret := strings.TrimPrefix(s.Placeholder(), "akira-placeholder-")
		if secret == s.Placeholder() || len(secret) < 32 {
			t.Fatalf("unexpected placeholder %q", s.Placeholder())
		}
		// Eight hex digits in common by chance: about one run in ten million.
		for i := 0; i+8 <= len(secret); i++ {
			if strings.Contains(name, secret[i:i+8]) {
				t.Errorf("socket %s carries %q of the placeholder %s", name, secret[i:i+8], s.Placeholder())
				break
			}
		}
		s.Close()
	}
}
