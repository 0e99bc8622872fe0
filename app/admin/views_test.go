package admin

import (
	"reflect"
	"strings"
	"testing"
)

// TestFailedCommands: the failing commands of an attempt's last verification, with the end of their
// output; passing ones, earlier verifications and other sections are left out.
func TestFailedCommands(t *testing.T) {
	log := "==> Run r1, task 1.2 (Docs), attempt 2\n\n==> Verification\n\n$ make old\n(exit 2, 1s)\nfrom an earlier verification\n" +
		"\n==> Agent (2s)\nedited\n\n==> Verification\n\n$ go vet ./...\n(exit 0, 1.2s)\nfine\n\n$ go test ./...\n(exit 1, 3.4s)\n--- FAIL: TestX\n" +
		"\n$ sleep 99\n(timed out, 10s)\n\n==> Acceptance judge\nnot reached\n"
	want := []failedCommand{{Command: "go test ./...", Result: "exited with code 1", Output: "--- FAIL: TestX"},
		{Command: "sleep 99", Result: "timed out"}}
	if got := failedCommands(log); !reflect.DeepEqual(got, want) {
		t.Errorf("failedCommands\n got %#v\nwant %#v", got, want)
	}
	if got := failedCommands("==> Agent (1s)\nno verification ran\n"); got != nil {
		t.Errorf("a log without verification: %#v", got)
	}
}

// TestReasonWords: the reasons people read, without the engine's codes or backticks.
func TestReasonWords(t *testing.T) {
	for _, tc := range []struct{ reason, summary, want string }{
		{"repeated_failure", "verification failed: `go test` exited 1", "the same failure happened twice in a row: verification failed: <code>go test</code> exited 1"},
		{"max_attempts", "", "every attempt failed"},
		{"awaiting_decision", "agent failed", "agent failed"},
		{"budget", "the run's budget is reached: spent $5.10 of the $5.00 it had", "the run&#39;s budget is spent: spent $5.10 of the $5.00 it had"},
		{"some_new_code", "<b>x</b>", "some new code: &lt;b&gt;x&lt;/b&gt;"},
	} {
		if got := string(plainWords(reasonWords(tc.reason, tc.summary))); got != tc.want {
			t.Errorf("reason %q, %q: %q, want %q", tc.reason, tc.summary, got, tc.want)
		}
	}
}

func TestLastLines(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{{"a\nb\nc\n", 2, "b\nc"}, {"a\nb", 5, "a\nb"}, {"", 3, ""}, {"one", 1, "one"}} {
		if got := lastLines(tc.s, tc.n); got != tc.want {
			t.Errorf("lastLines(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// BenchmarkFailedCommands reads the failing commands of a 1 MiB attempt log, as the run page does for
// each task that needs a decision.
func BenchmarkFailedCommands(b *testing.B) {
	out := strings.Repeat("ok  \tgithub.com/x/y/pkg\t0.012s\n", 1<<20/32)
	log := "==> Agent (2s)\nedited\n\n==> Verification\n\n$ go vet ./...\n(exit 0, 1s)\n\n$ go test ./...\n(exit 1, 30s)\n" + out + "--- FAIL: TestX\n"
	b.SetBytes(int64(len(log)))
	for b.Loop() {
		if got := failedCommands(log); len(got) != 1 {
			b.Fatal(got)
		}
	}
}
