package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// stdDecodeEvent is decodeEvent with encoding/json alone: the reference the faster decoder must agree
// with.
func stdDecodeEvent(event string, payload []byte) (envelope, any, error) {
	return decodeEventWith(json.Unmarshal, event, payload)
}

// decodeEvents are the events decodeEvent has a struct for, and one it has not.
var decodeEvents = []string{"issue_comment", "push", "pull_request", "pull_request_review",
	"pull_request_review_comment", "check_run", "issues", "check_suite", "workflow_run", "status", "ping"}

// checkDecodeAgrees fails when decodeEvent and encoding/json read a payload differently: another
// value, or a refusal on one side only (the faster decoder must refuse nothing the standard library
// reads, and accept nothing it refuses).
func checkDecodeAgrees(t *testing.T, event string, payload []byte) {
	t.Helper()
	gotEnv, gotEv, gotErr := decodeEvent(event, payload)
	wantEnv, wantEv, wantErr := stdDecodeEvent(event, payload)
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%s %q: error %v, encoding/json says %v", event, payload, gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotEnv, wantEnv) || !reflect.DeepEqual(gotEv, wantEv) {
		t.Fatalf("%s %q: decoded %+v %+v, encoding/json %+v %+v", event, payload, gotEnv, gotEv, wantEnv, wantEv)
	}
}

// TestDecodeAgreesOnGitHubExamples reads every example payload GitHub documents (when the shared
// fixtures are beside the repository) as its own event and as every other: the same values as
// encoding/json, field for field.
func TestDecodeAgreesOnGitHubExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(fixturesDir(t), "webhooks", "*", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, event := range append([]string{filepath.Base(filepath.Dir(file))}, decodeEvents...) {
			checkDecodeAgrees(t, event, body)
		}
	}
}

// FuzzDecodeAgrees mutates payloads of every kind Akira reads, wrong types, odd numbers, escapes,
// duplicate keys, invalid UTF-8 and all, and requires the same reading as encoding/json's.
func FuzzDecodeAgrees(f *testing.F) {
	for _, seed := range []string{
		`{"action":"created","installation":{"id":5},"repository":{"id":1,"full_name":"o/r","name":"r","owner":{"login":"o"},"default_branch":"main"},"sender":{"login":"alice","id":7,"type":"User"},"issue":{"number":3,"pull_request":{"url":"u"},"user":{"login":"bob"}},"comment":{"id":9,"body":"/akira run\n","user":{"login":"alice"}}}`,
		`{"ref":"refs/heads/main","before":"0000","after":"abcd","commits":[{"id":"abcd","added":["ROADMAP.md"],"modified":[],"removed":[]}],"head_commit":null,"repository":{"full_name":"o/p"}}`,
		`{"action":"requested_action","check_run":{"id":4,"external_id":"run-1","head_sha":"ab","app":{"id":3}},"requested_action":{"identifier":"approve"}}`,
		`{"action":"opened","pull_request":{"number":2,"head":{"ref":"akira/x","sha":"cd","repo":{"full_name":"o/r"}},"base":{"ref":"main"},"user":{"login":"u"}}}`,
		`{"comment":{"id":"seven"}}`,
		`{"installation":{"id":1e3}}`,
		`{"action":"\u0063reated","ACTION":"x","action":"edited"}`,
		"{\"sender\":{\"login\":\"\xff\xfe\"}}",
		`{"repository":{"full_name":"o/r"}} trailing`,
		`[1,2,3]`,
		`null`,
		`{"":{{}}}`,
		`{"a":01,"action":"created"}`,
		"{\"\":\"\\,8\",\"ACTI\\",
		strings.Repeat("[", 20000),
		`{"a":` + strings.Repeat(`{"b":`, 12000) + "1" + strings.Repeat("}", 12000) + "}",
	} {
		for _, event := range decodeEvents {
			f.Add(event, []byte(seed))
		}
	}
	if dir, err := findFixtures(); err == nil {
		files, _ := filepath.Glob(filepath.Join(dir, "webhooks", "*", "*.json"))
		for _, file := range files {
			if body, err := os.ReadFile(file); err == nil {
				f.Add(filepath.Base(filepath.Dir(file)), body)
			}
		}
	}
	f.Fuzz(func(t *testing.T, event string, payload []byte) {
		if !slices.Contains(decodeEvents, event) {
			event = "issue_comment"
		}
		checkDecodeAgrees(t, event, payload)
	})
}

// TestDecodeDeepNesting sends bodies that nest far deeper than any payload: the answer is a refusal
// (or, for the one that nests where Akira reads nothing, a reading), never a crash of the process.
// segmentio's decoder has no depth limit and overflows the stack on these.
func TestDecodeDeepNesting(t *testing.T) {
	for _, open := range []string{"[", `{"a":`, `{"repository":[`, `{"action":{"x":`} {
		for _, depth := range []int{maxNesting - 1, maxNesting + 1, 4 << 20 / len(open)} {
			body := append(bytes.Repeat([]byte(open), depth), '1')
			for _, event := range []string{"issue_comment", "ping"} {
				if _, _, err := decodeEvent(event, body); err == nil {
					t.Errorf("%s, %q × %d: read, want a refusal", event, open, depth)
				}
			}
		}
	}
	// Deep but within encoding/json's limit, and closed: read, by both decoders alike.
	deep := `{"action":"created","x":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}`
	checkDecodeAgrees(t, "issue_comment", []byte(deep))
}

// BenchmarkDecodeEvent reads GitHub's own issue_comment example (16 kB, when the shared fixtures are
// beside the repository) with encoding/json alone and with decodeEvent.
func BenchmarkDecodeEvent(b *testing.B) {
	dir, err := findFixtures()
	if err != nil {
		b.Skip(err)
	}
	body, err := os.ReadFile(filepath.Join(dir, "webhooks", "issue_comment", "created.with-installation.payload.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func(string, []byte) (envelope, any, error)
	}{{"encoding-json", stdDecodeEvent}, {"decodeEvent", decodeEvent}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, _, err := c.decode("issue_comment", body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
