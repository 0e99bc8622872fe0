// Package sandboxtest tells tests whether the bubblewrap sandbox runs on this machine. Where it does
// not, a test that needs it is skipped with what to install; CI sets AKIRA_TEST_SANDBOX_REQUIRED=1,
// and there a missing sandbox fails the test instead.
package sandboxtest

import (
	"os"
	"testing"

	"github.com/akira-bot/akira/internal/testnotes"
	"github.com/akira-bot/akira/runner/sandbox"
)

// EnvRequired makes a missing sandbox a test failure.
const EnvRequired = "AKIRA_TEST_SANDBOX_REQUIRED"

// Require skips (or, under EnvRequired, fails) tb when bubblewrap cannot run here.
func Require(tb testing.TB) {
	tb.Helper()
	err := sandbox.Available("")
	if err == nil {
		return
	}
	if os.Getenv(EnvRequired) != "" {
		tb.Fatal("this test needs the bubblewrap sandbox: " + err.Error())
	}
	testnotes.Skip(tb, "sandbox tests (bubblewrap)", err.Error())
}
