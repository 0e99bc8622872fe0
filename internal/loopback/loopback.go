// Package loopback picks a free port on 127.0.0.1 for a process that must be told its port before
// it binds it: a redis-server's --port, a repository environment's service, the demo's server whose
// address goes into its own settings. Where the process can bind port 0 and say what it bound, that
// is better: nothing can take the port in between.
//
// The port is chosen below Linux's ephemeral range (32768-60999 by default). Every outgoing
// connection on the host takes its local port from that range, so a port the kernel hands out for
// ":0" and that is released at once can be an outgoing connection's a moment later: CI saw `akira
// serve` fail with "address already in use" on one, and a worker makes outgoing connections all
// the time.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
)

// Lowest and below bound the ports FreePort chooses from.
const (
	Lowest = 20000
	below  = 32768
)

// FreePort is a port on 127.0.0.1 that nothing listens on now, chosen at random below the ephemeral
// range so that two processes choosing at once rarely pick the same one.
func FreePort() (int, error) {
	return freeIn(Lowest, below)
}

// freeIn is FreePort among the ports [lo, hi).
func freeIn(lo, hi int) (int, error) {
	var last error
	for range 200 {
		port := lo + rand.IntN(hi-lo)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			last = err
			continue
		}
		if err := ln.Close(); err != nil {
			return 0, fmt.Errorf("loopback: %w", err)
		}
		return port, nil
	}
	return 0, errors.Join(fmt.Errorf("loopback: no free port on 127.0.0.1 between %d and %d", lo, hi), last)
}

// FreeAddr is FreePort as "127.0.0.1:port".
func FreeAddr() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}
