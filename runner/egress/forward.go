package egress

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// ForwardArg, as the first argument of a binary that links this package (akira, and the test
// binaries of packages that import it), makes it the forwarder instead of itself: the sandbox needs
// no program of its own to bridge its private network to the session's socket.
const ForwardArg = "__akira-egress-forward"

func init() {
	if len(os.Args) > 1 && os.Args[1] == ForwardArg {
		os.Exit(forwardMain(os.Args[2:]))
	}
}

// ForwarderArgv is the command line that starts the forwarder (binary exe, as seen inside the
// sandbox) in front of argv: it listens on SandboxAddr, passes each connection to the socket, runs
// argv and exits with its status.
func ForwarderArgv(exe string, argv []string) []string {
	return append([]string{exe, ForwardArg, SandboxSocket, SandboxAddr, "--"}, argv...)
}

func forwardMain(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "akira egress forwarder: usage: SOCKET LISTEN -- COMMAND...")
		return 125
	}
	socket, listen, argv := args[0], args[1], args[3:]
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(os.Stderr, "akira egress forwarder: %v\n", err)
		return 125
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("unix", socket)
				if err != nil {
					c.Close()
					return
				}
				pipe(c, up)
			}()
		}
	}()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "akira egress forwarder: %v\n", err)
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
	err = cmd.Wait()
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
