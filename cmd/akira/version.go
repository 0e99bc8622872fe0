package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version, commit and date are set at build time with -ldflags "-X main.version=... -X
// main.commit=... -X main.date=..." (the release workflow and the Dockerfile do); a plain `go build`
// falls back on what the Go toolchain recorded of the VCS.
var (
	version = "dev"
	commit  = ""
	date    = ""
)

func init() { subcommands = append(subcommands, newVersionCmd) }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of akira",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, d := commit, date
			if c == "" || c == "unknown" {
				c = revision()
			}
			if d == "" || d == "unknown" {
				d = buildDate()
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "akira %s (commit %s, built %s, %s %s/%s)\n", version, c, d, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}

// revision reports the VCS commit the binary was built from, when the Go toolchain recorded it.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown commit"
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown commit"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// buildDate is the commit time the Go toolchain recorded, when it did.
func buildDate() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.time" {
				return s.Value
			}
		}
	}
	return "unknown date"
}
