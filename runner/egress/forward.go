package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// ForwardArg, as the first argument of a binary that links this package (akira, and the test
// binaries of packages that import it), makes it the forwarder instead of itself: the sandbox needs
// no program of its own to bridge its private network to the session's socket.
const ForwardArg = "__akira-egress-forward"

// ServeArg makes the binary the other end of a bridge, in a service's sandbox: it waits until the
// service accepts connections on its port, then passes every connection of a Unix socket to it.
const ServeArg = "__akira-service-serve"

func init() {
	if len(os.Args) > 1 && os.Args[1] == ForwardArg {
		os.Exit(forwardMain(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == ServeArg {
		os.Exit(serveMain(os.Args[2:]))
	}
}

// Link is one bridge across a sandbox's private network: a TCP address inside it and the Unix
// socket (as seen inside) that connections to it are passed to.
type Link struct {
	Socket, Addr string
}

// ForwarderArgv is the command line that starts the forwarder (binary exe, as seen inside the
// sandbox) in front of argv: it listens on SandboxAddr, passes each connection to the socket, runs
// argv and exits with its status.
func ForwarderArgv(exe string, argv []string) []string {
	return BridgeArgv(exe, []Link{{Socket: SandboxSocket, Addr: SandboxAddr}}, argv)
}

// BridgeArgv is ForwarderArgv for any number of links: the egress proxy's and the run's services'.
func BridgeArgv(exe string, links []Link, argv []string) []string {
	out := []string{exe, ForwardArg}
	for _, l := range links {
		out = append(out, l.Socket, l.Addr)
	}
	return append(append(out, "--"), argv...)
}

// ServeArgv is the command line that runs a service's argv behind a bridge: once argv accepts
// connections on addr, socket (as seen inside the sandbox) is created and passes its connections on.
func ServeArgv(exe, socket, addr string, argv []string) []string {
	return append([]string{exe, ServeArg, socket, addr, "--"}, argv...)
}

func forwardMain(args []string) int {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 2 || sep%2 != 0 || sep == len(args)-1 {
		fmt.Fprintln(os.Stderr, "akira egress forwarder: usage: SOCKET LISTEN [SOCKET LISTEN ...] -- COMMAND...")
		return 125
	}
	for i := 0; i < sep; i += 2 {
		socket, listen := args[i], args[i+1]
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			fmt.Fprintf(os.Stderr, "akira egress forwarder: %v\n", err)
			return 125
		}
		go Pass(ln, "unix", socket)
	}
	return runChild(args[sep+1:], "akira egress forwarder")
}

// Pass passes every connection ln accepts to a new connection to network/addr, until ln is closed.
func Pass(ln net.Listener, network, addr string) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.Dial(network, addr)
			if err != nil {
				c.Close()
				return
			}
			pipe(c, up)
		}()
	}
}

func serveMain(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "akira service bridge: usage: SOCKET ADDR -- COMMAND...")
		return 125
	}
	socket, addr, argv := args[0], args[1], args[3:]
	go func() {
		// The socket appears only once the service answers: its existence is the readiness Akira waits for.
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		ln, err := net.Listen("unix", socket+".tmp")
		if err != nil {
			fmt.Fprintf(os.Stderr, "akira service bridge: %v\n", err)
			return
		}
		if err := os.Rename(socket+".tmp", socket); err != nil {
			fmt.Fprintf(os.Stderr, "akira service bridge: %v\n", err)
			return
		}
		Pass(ln, "tcp", addr)
	}()
	return runChild(argv, "akira service bridge")
}

// runChild runs argv with the bridge's standard streams, passes termination signals on and returns
// its exit status.
func runChild(argv []string, who string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", who, err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return 127
		}
		return 126
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return 126
	}
	return 0
}
