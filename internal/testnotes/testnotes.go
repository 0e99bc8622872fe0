// Package testnotes lets a test leave one line for the end of `make test`: which Redis a test binary
// used, or which group of tests was skipped for want of a tool and what to install. `go test ./...`
// shows nothing a passing package printed, so the lines go to the file AKIRA_TEST_NOTES names; the
// Makefile points it at a temporary file and prints the de-duplicated lines after the run
// (scripts/test-notes.sh). Without the variable nothing is written.
package testnotes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the file the notes are appended to.
const Env = "AKIRA_TEST_NOTES"

// Kinds of note; scripts/test-notes.sh groups the lines by them.
const (
	KindRedis   = "redis"
	KindSkipped = "skipped"
)

// Note appends one line "kind<TAB>package<TAB>text" to the notes file. Every test binary of the run
// appends to the same file: one short O_APPEND write per line keeps their lines whole.
func Note(kind, text string) {
	path := os.Getenv(Env)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	line := kind + "\t" + Package() + "\t" + strings.ReplaceAll(text, "\n", " ") + "\n"
	_, _ = f.WriteString(line)
}

// Skip notes that tb's group of tests is skipped, with what to install, and skips tb.
func Skip(tb testing.TB, group, hint string) {
	tb.Helper()
	Note(KindSkipped, group+": "+hint)
	tb.Skip(group + " skipped: " + hint)
}

// Package is the directory of the test binary's package relative to the module root (go test runs
// a test binary in its package's directory), e.g. "cmd/akira"; "." when it cannot tell.
func Package() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	root, err := moduleRoot(wd)
	if err != nil {
		return "."
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return "."
	}
	return filepath.ToSlash(rel)
}

func moduleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", errors.New("testnotes: no go.mod above " + dir)
		}
	}
}
