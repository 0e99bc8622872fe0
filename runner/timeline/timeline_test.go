package timeline

import (
	"encoding/json"
	"strings"
	"testing"
)

// What a timeline keeps is masked before it is cut: a secret that straddles the cut is not kept
// half; every text is bounded, a path and a command keep their spaces, a tail keeps the end.
func TestCleanMasksThenBounds(t *testing.T) {
	const secret = "sk-ant-real-key-0123456789"
	m := NewMasker(secret, "short")
	// The secret starts just before the cut, so that cutting first would keep its head.
	args := strings.Repeat("a", MaxText-3) + secret
	tail := secret + strings.Repeat("z", TailBytes-5)
	ev := m.Clean(Event{Kind: KindAgentStep,
		Step:    &Step{Tool: "Bash", Args: args, Text: "say " + secret + " and short"},
		Command: &Command{Command: "go  test ./...", Tail: tail},
		File:    &File{Path: "dir with  spaces/" + secret + ".txt"},
		Call:    &ModelCall{Refused: "key " + secret},
		Verdict: &Verdict{Failed: []string{"c: " + secret}},
		End:     &End{Summary: strings.Repeat("é", MaxText)},
	})
	js, _ := json.Marshal(ev)
	for _, leak := range []string{secret, secret[:len(secret)-5], secret[5:]} {
		if strings.Contains(string(js), leak) {
			t.Errorf("%q kept: %s", leak, js)
		}
	}
	if !strings.Contains(ev.Step.Text, "short") {
		t.Errorf("a secret under 6 characters masked ordinary words: %q", ev.Step.Text)
	}
	if len(ev.Step.Args) > MaxText || !strings.HasSuffix(ev.Step.Args, "…") {
		t.Errorf("args = %d bytes %q", len(ev.Step.Args), ev.Step.Args)
	}
	if ev.Command.Command != "go  test ./..." || ev.File.Path != "dir with  spaces/[masked].txt" {
		t.Errorf("command %q, path %q: their spaces must be kept", ev.Command.Command, ev.File.Path)
	}
	if len(ev.Command.Tail) > TailBytes || !strings.HasSuffix(ev.Command.Tail, "zzz") {
		t.Errorf("tail = %d bytes", len(ev.Command.Tail))
	}
	if len(ev.End.Summary) > MaxText || !strings.HasSuffix(ev.End.Summary, "é…") {
		t.Errorf("summary cut inside a character: %q", ev.End.Summary[len(ev.End.Summary)-6:])
	}
}

func TestShortenAndTail(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"one\n two\t three", 20, "one two three"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"abcdefghij", 10, "abcdefghij"},
		{"ab€€€", 10, "ab€…"},
	}
	for _, tt := range tests {
		if got := Shorten(tt.in, tt.n); got != tt.want {
			t.Errorf("Shorten(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
	if got := Shorten("red \x1b[31mtext\x1b]0;title\x07", 40); got != "red \ufffd[31mtext\ufffd]0;title\ufffd" {
		t.Errorf("Shorten kept a control character: %q", got)
	}
	if got := Printable("line\n\ttab\x1b\u009b"); got != "line\n\ttab\ufffd\ufffd" {
		t.Errorf("Printable = %q", got)
	}
	if got := Tail("a€b", 3); got != "b" {
		t.Errorf("Tail = %q, want the end from a character's start", got)
	}
}
