package roadmap

import (
	"fmt"
	"strings"
	"testing"
)

// bigRoadmap is a markdown roadmap with phases of 20 tasks, each depending on the one before and
// carrying a subtask and a verify command.
func bigRoadmap(tasks int) []byte {
	var b strings.Builder
	b.WriteString("# Big\n")
	for i := 0; i < tasks; i++ {
		if i%20 == 0 {
			fmt.Fprintf(&b, "\n## Phase %d\n\n", i/20+1)
		}
		fmt.Fprintf(&b, "- [ ] T%d Task number %d", i, i)
		if i > 0 {
			fmt.Fprintf(&b, " (depends: T%d)", i-1)
		}
		b.WriteString("\n  - [ ] a subtask\n  - verify: `go test ./...`\n")
	}
	return []byte(b.String())
}

func BenchmarkParseMarkdown(b *testing.B) {
	data := bigRoadmap(2000)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMarkdown("ROADMAP.md", data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTickMarkdown(b *testing.B) {
	data := bigRoadmap(2000)
	r, err := ParseMarkdown("ROADMAP.md", data)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Tick(r, data, "T1999"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseHostileTitle parses one task whose title is half a megabyte of unclosed "(depends: ".
// Roadmaps arrive from pushes and issue bodies, so parsing must stay linear in hostile input: compare
// its MB/s with BenchmarkParseMarkdown's (it was quadratic once: ~1 s for this input).
func BenchmarkParseHostileTitle(b *testing.B) {
	data := []byte("- [ ] " + strings.Repeat("(depends: ", 50000) + "\n")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseMarkdown("ROADMAP.md", data); err != nil {
			b.Fatal(err)
		}
	}
}
