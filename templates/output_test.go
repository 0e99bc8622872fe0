package templates

import (
	"reflect"
	"testing"
)

// TestOutputBlocks: the engine's feedback is taken apart into its outputs, without its header, its
// "$ cmd / exit code" lines and its fences; other text stays one block; empty outputs go.
func TestOutputBlocks(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []OutputBlock
	}{
		{"empty", " \n", nil},
		{"raw output with its own fences", "line\n```go\npanic: boom\n```\n", []OutputBlock{{Text: "line\n```go\npanic: boom\n```"}}},
		{"failing commands", "Attempt 2 failed: verification failed: `go test ./...` exited 1, `go vet` exited 2.\n\n$ go test ./...\nexit code 1\n```\n--- FAIL: TestDiv\n```\n\n$ go vet\nexit code 2 (killed: timeout)\n````\nhas ``` inside\n````\n",
			[]OutputBlock{{Source: "go test ./...", Text: "--- FAIL: TestDiv"}, {Source: "go vet", Text: "has ``` inside"}}},
		{"a command with no output", "Attempt 1 failed: verification failed: `false` exited 1.\n\n$ false\nexit code 1\n```\n\n```\n", nil},
		{"the agent's output", "Attempt 1 failed: agent: exit status 1.\n\nThe end of the agent's output:\n\n```\nI give up\n```\n",
			[]OutputBlock{{Source: "the agent", Text: "I give up"}}},
		{"prose", "Attempt 1 failed: the acceptance judge did not accept the work.\n\nVerification passed, but the judge read the diff:\n\n- no error on b == 0 (NOT met): Div panics\n",
			[]OutputBlock{{Text: "Verification passed, but the judge read the diff:\n\n- no error on b == 0 (NOT met): Div panics", Prose: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := OutputBlocks(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("OutputBlocks(%q)\n got %#v\nwant %#v", tc.in, got, tc.want)
			}
		})
	}
}
