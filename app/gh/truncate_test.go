package gh

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/akira-bot/akira/jobs/ports"
)

func TestTruncateShortIsUnchanged(t *testing.T) {
	for _, s := range []string{"", "hello", strings.Repeat("a", 100)} {
		if got := Truncate(s, 100); got != s {
			t.Errorf("Truncate(%q) = %q", s, got)
		}
	}
}

func TestTruncate(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		limit     int
		wantFence string // the fence the output must end its kept text with, "" for none
	}{
		{"ascii lines", strings.Repeat("line of output\n", 1000), 1000, ""},
		{"one long line", strings.Repeat("x", 5000), 1000, ""},
		{"multibyte", strings.Repeat("日本語のテキスト🙂\n", 500), 2000, ""},
		{"multibyte no newline", strings.Repeat("🙂", 3000), 1001, ""},
		{"open backtick fence", "intro\n\n```text\n" + strings.Repeat("out\n", 2000), 1500, "```"},
		{"open long fence", "intro\n\n`````go\n" + strings.Repeat("```\nout\n", 500), 1500, "`````"},
		{"open tilde fence", "~~~\n" + strings.Repeat("out\n", 2000), 1500, "~~~"},
		{"closed fence", "```\nshort\n```\n\n" + strings.Repeat("tail\n", 2000), 1500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Truncate(tt.in, tt.limit)
			if len(got) > tt.limit {
				t.Fatalf("%d bytes, limit %d", len(got), tt.limit)
			}
			if !utf8.ValidString(got) {
				t.Fatal("not valid UTF-8")
			}
			kept, note, ok := strings.Cut(got, "\n\n… output truncated: ")
			if !ok {
				t.Fatalf("no truncation note in %q", got[max(0, len(got)-100):])
			}
			var omitted int
			if _, err := fmt.Sscanf(note, "%d characters omitted", &omitted); err != nil {
				t.Fatalf("note %q: %v", note, err)
			}
			keptOriginal := kept
			if tt.wantFence != "" {
				if !strings.HasSuffix(kept, "\n"+tt.wantFence) {
					t.Fatalf("open fence not closed with %q: ...%q", tt.wantFence, kept[max(0, len(kept)-40):])
				}
				keptOriginal = strings.TrimSuffix(kept, "\n"+tt.wantFence)
			} else if openFence(kept) != "" {
				t.Fatalf("kept text ends inside a fence")
			}
			if !strings.HasPrefix(tt.in, keptOriginal) {
				t.Fatal("kept text is not a prefix of the input")
			}
			if want := utf8.RuneCountInString(tt.in) - utf8.RuneCountInString(keptOriginal); omitted != want {
				t.Fatalf("note says %d omitted, want %d", omitted, want)
			}
			// The cut should not waste the budget: nearly all of it is used.
			if len(got) < tt.limit*3/4 {
				t.Fatalf("only %d of %d bytes used", len(got), tt.limit)
			}
		})
	}
}

func TestTruncateAtGitHubLimits(t *testing.T) {
	in := strings.Repeat("ü", MaxCommentLen) // 131,072 bytes, 65,536 characters
	got := TruncateComment(in)
	if len(got) > MaxCommentLen || !strings.HasSuffix(got, "characters omitted") {
		t.Fatalf("%d bytes, ends %q", len(got), got[len(got)-30:])
	}
	exact := strings.Repeat("a", MaxCheckOutputLen)
	if Truncate(exact, MaxCheckOutputLen) != exact {
		t.Fatal("text at exactly the limit was cut")
	}
}

func TestOpenFence(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"```", "```"},
		{"```go\ncode", "```"},
		{"```go\ncode\n```", ""},
		{"````\n```\n", "````"},
		{"````\n```\n````", ""},
		{"~~~\n```\n", "~~~"},
		{"    ```\nindented code, not a fence", ""},
		{"``` a ` b\nnot a fence: backtick in the info string", ""},
		{"```\n``` trailing text does not close", "```"},
	}
	for _, tt := range tests {
		if got := openFence(tt.in); got != tt.want {
			t.Errorf("openFence(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeAnnotations(t *testing.T) {
	got := normalizeAnnotations([]ports.Annotation{
		{Path: "", StartLine: 1, Message: "dropped: no path"},
		{Path: "./a.go", StartLine: 0, EndLine: 0, Level: "error", Message: ""},
		{Path: "b.go", StartLine: 5, EndLine: 3, Level: LevelWarning, Title: strings.Repeat("t", 300), Message: "m"},
	})
	if len(got) != 2 {
		t.Fatalf("%d annotations, want 2", len(got))
	}
	a, b := got[0], got[1]
	if a.Path != "a.go" || a.StartLine != 1 || a.EndLine != 1 || a.AnnotationLevel != LevelFailure || a.Message != "(no message)" {
		t.Errorf("first = %+v", a)
	}
	if b.StartLine != 5 || b.EndLine != 5 || b.AnnotationLevel != LevelWarning || utf8.RuneCountInString(b.Title) != 255 {
		t.Errorf("second = %+v (title %d runes)", b, utf8.RuneCountInString(b.Title))
	}
}

func TestEscalationButtonsFitGitHubLimits(t *testing.T) {
	buttons := ports.EscalationButtons()
	if len(buttons) != 3 {
		t.Fatalf("%d buttons", len(buttons))
	}
	for _, b := range buttons {
		if utf8.RuneCountInString(b.Label) > 20 || utf8.RuneCountInString(b.Description) > 40 || len(b.Decision) > 20 {
			t.Errorf("button %+v is over GitHub's limits", b)
		}
	}
}
