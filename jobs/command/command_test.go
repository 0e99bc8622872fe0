package command

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseCommands(t *testing.T) {
	tests := []struct {
		name string
		body string
		want ParseResult
	}{
		{"run", "/akira run", Command{Name: CmdRun}},
		{"run trusting the plan", "/akira run --trust-plan", Command{Name: CmdRun, TrustPlan: true}},
		{"run a path, trusting it", "/akira run --trust-plan docs/plan.md", Command{Name: CmdRun, Path: "docs/plan.md", TrustPlan: true}},
		{"run the proposed plan", "/akira run --confirm", Command{Name: CmdRun, Confirm: true}},
		{"confirm in any case", "/akira run --CONFIRM --trust-plan", Command{Name: CmdRun, Confirm: true, TrustPlan: true}},
		{"run with path", "/akira run docs/ROADMAP.md", Command{Name: CmdRun, Path: "docs/ROADMAP.md"}},
		{"run with budget", "/akira run --budget 20", Command{Name: CmdRun, BudgetUSD: 20}},
		{"run on a red base", "/akira run --allow-red-base", Command{Name: CmdRun, AllowRedBase: true}},
		{"run with budget in dollars and a path", "/akira run --budget=$7.5 plan.md", Command{Name: CmdRun, BudgetUSD: 7.5, Path: "plan.md"}},
		{"stop", "/akira stop", Command{Name: CmdStop}},
		{"rollback", "/akira rollback 1.2", Command{Name: CmdRollback, TaskID: "1.2"}},
		{"remember", "/akira remember run migrations with make migrate\nnever by hand", Command{Name: CmdRemember, Guidance: "run migrations with make migrate\nnever by hand"}},
		{"forget", "/akira forget L0a1b2c3d", Command{Name: CmdForget, TaskID: "L0a1b2c3d"}},
		{"rollback, then prose", "/akira rollback T3\nthe parser was wrong", Command{Name: CmdRollback, TaskID: "T3"}},
		{"rollback and retry", "/akira rollback WP-01 --retry", Command{Name: CmdRollback, TaskID: "WP-01", Retry: true}},
		{"rollback and retry with guidance", "/akira rollback 2.1 --retry keep the old API\nand its tests",
			Command{Name: CmdRollback, TaskID: "2.1", Retry: true, Guidance: "keep the old API\nand its tests"}},
		{"plan with guidance", "/akira plan keep it small", Command{Name: CmdPlan, Guidance: "keep it small"}},
		{"fix", "/akira fix use the helper", Command{Name: CmdFix, Guidance: "use the helper"}},
		{"run trailing space", "/akira run   \n", Command{Name: CmdRun}},
		{"approve", "/akira approve", Command{Name: CmdApprove}},
		{"skip", "/akira skip", Command{Name: CmdSkip}},
		{"abort", "/akira abort", Command{Name: CmdAbort}},
		{"status", "/akira status", Command{Name: CmdStatus}},
		{"retry bare", "/akira retry", Command{Name: CmdRetry}},
		{"retry one line", "/akira retry use the v2 API", Command{Name: CmdRetry, Guidance: "use the v2 API"}},
		{"retry spans lines", "/akira retry use the v2 API\nand keep the old test\n\n- bullet",
			Command{Name: CmdRetry, Guidance: "use the v2 API\nand keep the old test\n\n- bullet"}},
		{"retry guidance on next line", "/akira retry\nthe flaky test needs a seed", Command{Name: CmdRetry, Guidance: "the flaky test needs a seed"}},
		{"crlf", "/akira retry first\r\nsecond\r\n", Command{Name: CmdRetry, Guidance: "first\nsecond"}},
		{"case insensitive", "/Akira APPROVE", Command{Name: CmdApprove}},
		{"tab separator", "/akira\tskip", Command{Name: CmdSkip}},
		{"indented up to three spaces", "   /akira approve", Command{Name: CmdApprove}},
		{"after prose", "Looks good to me.\n\n/akira approve\n", Command{Name: CmdApprove}},
		{"first command wins", "/akira skip\n/akira abort", Command{Name: CmdSkip}},
		{"after a closed fence", "```\n/akira abort\n```\n/akira approve", Command{Name: CmdApprove}},
		{"after a tilde fence", "~~~sh\n/akira abort\n~~~\n/akira skip", Command{Name: CmdSkip}},
		{"inline triple backticks are not a fence", "``` inline ``` text\n/akira skip", Command{Name: CmdSkip}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseComment(tt.body); got != tt.want {
				t.Fatalf("ParseComment(%q) = %#v, want %#v", tt.body, got, tt.want)
			}
		})
	}
}

func TestParseIgnores(t *testing.T) {
	tests := []struct{ name, body string }{
		{"empty", ""},
		{"prose", "Thanks, this looks great!"},
		{"mid line", "please /akira approve this"},
		{"inline code", "type `/akira approve` to continue"},
		{"four spaces is a code block", "    /akira approve"},
		{"tab is a code block", "\t/akira approve"},
		{"in fenced block", "```\n/akira approve\n```"},
		{"in unclosed fence", "```go\n/akira approve"},
		{"in longer fence", "````\n```\n/akira approve\n````"},
		{"in tilde fence", "~~~\n/akira approve\n~~~"},
		{"quoted", "> /akira approve\n\nno, not yet"},
		{"nested quote", "> > /akira abort"},
		{"indented quote", "  > /akira approve"},
		{"other bot", "/akirabot run"},
		{"other prefix", "/akira-ci run"},
		{"different command", "/deploy now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseComment(tt.body); got != (Ignore{}) {
				t.Fatalf("ParseComment(%q) = %#v, want Ignore", tt.body, got)
			}
		})
	}
}

func TestParseReplies(t *testing.T) {
	tests := []struct {
		name string
		body string
		// wantIn must all appear in the reply.
		wantIn []string
		// wantOut must not.
		wantOut []string
	}{
		{"help", "/akira help", []string{"/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]", "/akira approve", "/akira retry", "/akira skip",
			"/akira abort", "/akira status", "/akira help", "write, maintain or admin"}, nil},
		{"help with words", "/akira help me please", []string{"/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]"}, nil},
		{"bare akira", "/akira", []string{"/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]"}, nil},
		{"typo approve", "/akira aprove", []string{"Did you mean `/akira approve`?"}, []string{"/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]"}},
		{"typo retry", "/akira rerty now", []string{"Did you mean `/akira retry`?"}, nil},
		{"typo status", "/akira stauts", []string{"Did you mean `/akira status`?"}, nil},
		{"typo abort", "/akira abrot", []string{"Did you mean `/akira abort`?"}, nil},
		{"typo skip case", "/akira SKIPP", []string{"Did you mean `/akira skip`?"}, nil},
		{"unknown far", "/akira deploy", []string{"I don't know `/akira deploy`", "/akira help"}, []string{"Did you mean"}},
		{"one letter", "/akira x", []string{"I don't know `/akira x`"}, []string{"Did you mean"}},
		{"remember nothing", "/akira remember", []string{"/akira remember <text>"}, nil},
		{"forget a bad id", "/akira forget everything", []string{"/akira forget <lesson id>"}, nil},
		{"rollback without a task", "/akira rollback", []string{"/akira rollback <task> [--retry [guidance]]"}, nil},
		{"rollback of an option", "/akira rollback --force 1.2", []string{"/akira rollback <task> [--retry [guidance]]"}, nil},
		{"rollback of two tasks", "/akira rollback 1.2 1.3", []string{"/akira rollback <task> [--retry [guidance]]"}, nil},
		{"approve with args", "/akira approve please", []string{"Usage:", "/akira approve"}, nil},
		{"status with args", "/akira status now", []string{"Usage:", "/akira status"}, nil},
		{"budget without a number", "/akira run --budget lots", []string{"Usage:"}, nil},
		{"budget without a value", "/akira run --budget", []string{"Usage:"}, nil},
		{"negative budget", "/akira run --budget -5", []string{"Usage:"}, nil},
		{"run with two args", "/akira run a.md b.md", []string{"Usage:", "/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]"}, nil},
		{"run outside repo", "/akira run ../secrets.md", []string{"is not a path inside this repository"}, nil},
		{"run absolute", "/akira run /etc/passwd", []string{"is not a path inside this repository"}, nil},
		{"git option as a path", "/akira run --upload-pack=touch", []string{"Usage:", "/akira run [--trust-plan] [--confirm] [--allow-red-base] [--budget <usd>] [path]"}, nil},
		{"option after the path", "/akira run plan.md -c core.hooksPath=x", []string{"Usage:"}, nil},
		{"dash path", "/akira run -plan.md", []string{"Usage:"}, nil},
		{"refspec-like path", "/akira run main:plan.md", []string{"is not a path inside this repository"}, nil},
		{"backticks cannot break out", "/akira ap`prove", []string{"`` /akira ap`prove ``"}, nil},
		{"long input is clipped", "/akira " + strings.Repeat("z", 100), []string{strings.Repeat("z", 60) + "…"}, []string{strings.Repeat("z", 61)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseComment(tt.body)
			r, ok := got.(Reply)
			if !ok {
				t.Fatalf("ParseComment(%q) = %#v, want a Reply", tt.body, got)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(r.Text, s) {
					t.Errorf("reply lacks %q:\n%s", s, r.Text)
				}
			}
			for _, s := range tt.wantOut {
				if strings.Contains(r.Text, s) {
					t.Errorf("reply has %q:\n%s", s, r.Text)
				}
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"approve", "approve", 0},
		{"aprove", "approve", 1},
		{"rerty", "retry", 2},
		{"", "run", 3},
		{"kitten", "sitting", 3},
		{"héllo", "hello", 1},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func FuzzParseComment(f *testing.F) {
	for _, s := range []string{"/akira run x", "```\n/akira skip\n```", "> /akira abort", "/akira retry a\nb", "/akira aprove"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		switch r := ParseComment(body).(type) {
		case Ignore:
			// A first line that is a command can never be ignored.
			first, _, _ := strings.Cut(body, "\n")
			if commandLineRE.MatchString(strings.TrimSuffix(first, "\r")) {
				t.Fatalf("ignored a comment starting with a command: %q", body)
			}
		case Reply:
			if r.Text == "" {
				t.Fatalf("empty reply for %q", body)
			}
		case Command:
			if r.Name == CmdHelp || commandREs[r.Name] == nil {
				t.Fatalf("command %q for %q", r.Name, body)
			}
			if r.Path != "" && !validRoadmapPath(r.Path) {
				t.Fatalf("invalid path %q accepted from %q", r.Path, body)
			}
		default:
			t.Fatalf("unexpected result %T", r)
		}
	})
}

func BenchmarkParseComment(b *testing.B) {
	body := strings.Repeat("Some discussion of the change.\n\n```go\n/akira abort\n```\n> /akira skip\n", 20) +
		"/akira retry use the v2 client\nand keep the old test\n"
	for b.Loop() {
		if _, ok := ParseComment(body).(Command); !ok {
			b.Fatal("no command")
		}
	}
}

func TestGuidanceIsCapped(t *testing.T) {
	huge := strings.Repeat("é", MaxUserText) // two bytes each: twice the cap
	got, ok := ParseComment("/akira retry " + huge).(Command)
	if !ok {
		t.Fatal("not a command")
	}
	if len(got.Guidance) > MaxUserText+100 || !strings.Contains(got.Guidance, "[Akira: guidance cut at 64 KB of 128 KB]") {
		t.Errorf("guidance of %d bytes, ends %q", len(got.Guidance), got.Guidance[len(got.Guidance)-60:])
	}
	if !utf8.ValidString(got.Guidance) {
		t.Error("the cut split a character")
	}
	if small, _ := ParseComment("/akira retry use the v2 API").(Command); small.Guidance != "use the v2 API" {
		t.Errorf("short guidance changed: %q", small.Guidance)
	}
}
