package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestFreeIsBindableAndBelowTheEphemeralRange: the port can be bound, and is never one the kernel
// hands to outgoing connections by default.
func TestFreeIsBindableAndBelowTheEphemeralRange(t *testing.T) {
	for range 50 {
		addr, err := FreeAddr()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("FreeAddr gave %s, which cannot be bound: %v", addr, err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if port < Lowest || port >= below {
			t.Fatalf("port %d outside [%d, %d)", port, Lowest, below)
		}
	}
}

// TestFreeSkipsATakenPort: of two ports, one held by a listener, the other is chosen every time.
func TestFreeSkipsATakenPort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for range 50 {
		got, err := freeIn(port, port+2)
		if err != nil {
			t.Skipf("the port beside %d is taken too: %v", port, err)
		}
		if got != port+1 {
			t.Fatalf("freeIn gave %d; %d is taken, %d free", got, port, port+1)
		}
	}
}
