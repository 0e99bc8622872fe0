package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// cliHandler writes the log lines of a command a person watches (akira run) the way its other
// messages read: "akira: warning: ..." for warnings and errors, info lines only with --verbose, and
// no timestamps or level words of log's default format in the middle of the run's view.
type cliHandler struct {
	mu      *sync.Mutex
	w       io.Writer
	verbose bool
	attrs   []slog.Attr
}

func newCLIHandler(w io.Writer, verbose bool) *cliHandler {
	return &cliHandler{mu: &sync.Mutex{}, w: w, verbose: verbose}
}

func (h *cliHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.verbose && l >= slog.LevelInfo
}

func (h *cliHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString("akira: ")
	if r.Level >= slog.LevelWarn {
		b.WriteString("warning: ")
	}
	b.WriteString(strings.TrimPrefix(r.Message, "runner: "))
	var parts []string
	add := func(a slog.Attr) bool {
		if v := a.Value.String(); v != "" {
			parts = append(parts, a.Key+"="+v)
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *cliHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &c
}

func (h *cliHandler) WithGroup(string) slog.Handler { return h }

// engineError is an error of the engine as a person reads it: without the "runner: " its
// package prefixes it with, which names Akira's insides, not what is wrong.
type engineError struct{ err error }

func (e engineError) Error() string {
	msg := e.err.Error()
	for strings.HasPrefix(msg, "runner: ") {
		msg = strings.TrimPrefix(msg, "runner: ")
	}
	return msg
}

func (e engineError) Unwrap() error { return e.err }

// flagError is what a mistyped flag gets: the flag, the closest flag of the command when one is
// close, and where the flags are listed.
func flagError(c *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := closestFlag(c, name); s != "" {
			msg += "\ndid you mean --" + s + "?"
		}
	}
	return withExit(2, fmt.Errorf("%s\nsee '%s --help'", msg, c.CommandPath()))
}

// closestFlag is the flag of c (its own and inherited) nearest to name, within a third of its
// length in edits, or "".
func closestFlag(c *cobra.Command, name string) string {
	best, bestDist := "", len(name)/3+1
	visit := func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); d < bestDist || strings.HasPrefix(f.Name, name) && best == "" {
			best, bestDist = f.Name, d
		}
	}
	c.Flags().VisitAll(visit)
	c.InheritedFlags().VisitAll(visit)
	return best
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
