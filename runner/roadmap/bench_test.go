package roadmap

import (
	"fmt"
	"math/rand/v2"
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

// BenchmarkPlan is `akira plan --parallel 8` without the printing — parse, check, order and the
// waves — on generated plans of 1,000, 10,000 and 100,000 tasks in each convention (see genPlans):
// the time per plan should grow with its size, not its square (issue 48: 10,000 tasks within 1 s,
// 100,000 within 10 s). ns/task is the time per task.
func BenchmarkPlan(b *testing.B) {
	for _, conv := range genConventions {
		for _, n := range []int{1_000, 10_000, 100_000} {
			b.Run(fmt.Sprintf("%s/%dk", conv, n/1000), func(b *testing.B) {
				g := genPlans(conv, n, rand.New(rand.NewPCG(48, uint64(n))))
				b.SetBytes(int64(len(g.src)))
				for b.Loop() {
					r, err := Parse("tasks.md", g.src)
					if err != nil {
						b.Fatal(err)
					}
					if len(r.Waves(8)) == 0 {
						b.Fatal("no waves")
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(g.ids)), "ns/task")
				// For `make bench`: the time of one plan, per convention and size.
				b.Logf("akira-bench: plan.%s.%d.seconds %.4f", strings.ReplaceAll(conv, "+", "-"), n, b.Elapsed().Seconds()/float64(b.N))
			})
		}
	}
}
