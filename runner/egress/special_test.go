package egress

import (
	"net/netip"
	"testing"
)

// The special-purpose blocks end where IANA's registries end them: the addresses just outside are
// the public internet, which an allowlisted name may resolve to.
func TestSpecialLeavesPublicAddresses(t *testing.T) {
	tests := []struct {
		addr, want string
	}{
		{"8.8.8.8", ""},
		{"100.63.255.255", ""},
		{"100.128.0.1", ""},
		{"192.0.3.1", ""},
		{"198.17.255.255", ""},
		{"198.20.0.1", ""},
		{"203.0.114.1", ""},
		{"223.255.255.254", ""},
		{"2606:4700:4700::1111", ""},
		{"2001:200::1", ""},
		{"2001:db9::1", ""},
		{"2003::1", ""},
		{"3fff:1000::1", ""},
		{"64:ff9c::1", ""},
		{"192.0.2.1", "documentation (TEST-NET-1)"},
		{"::ffff:192.0.2.1", "documentation (TEST-NET-1)"},
		{"::ffff:127.0.0.1", "loopback"},
		{"2001:1::1", "IETF protocol assignment"},
		{"2001:1ff::1", "IETF protocol assignment"},
		{"5f00::1", "SRv6 SID"},
		{"100:0:0:1::1", "dummy prefix"},
		{"::a00:1", "IPv4-compatible"},
	}
	for _, tt := range tests {
		if got := special(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("special(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
