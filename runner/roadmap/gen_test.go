package roadmap

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// genPlan is a plan written by genPlans in one convention, with what the generator knows it says,
// independently of the parser: the order its words and its convention's rules ask for.
type genPlan struct {
	convention string
	src        []byte
	ids        []string            // the tasks, in document order
	after      map[string][]string // what each task must come after
	// afterGroups are more of what a task must come after, as indexes of groups: a phase's tasks,
	// written once rather than once per task that waits for them.
	afterGroups map[string][]int
	groups      [][]string
	done        map[string]bool
	optional    map[string]bool
	// alone are the tasks that may share no wave: neither [P] nor a dependency their author wrote.
	alone map[string]bool
}

// genConventions are the conventions genPlans writes.
var genConventions = []string{ConventionChecklist, ConventionGSD, ConventionSpecKit, ConventionSpecKit + "+order", ConventionKiro, ConventionOpenSpec}

// genPlans writes a plan of about n tasks in a convention (ConventionSpecKit+"+order" is spec-kit
// with its "Dependencies & Execution Order" section), with phases, waves, [P] tasks, done and
// optional tasks and dependencies on earlier tasks, drawn from rng.
func genPlans(convention string, n int, rng *rand.Rand) genPlan {
	g := genPlan{convention: convention, after: map[string][]string{}, afterGroups: map[string][]int{}, done: map[string]bool{},
		optional: map[string]bool{}, alone: map[string]bool{}}
	var b strings.Builder
	box := func(id string) string {
		if rng.IntN(5) == 0 {
			g.done[id] = true
			return "[x]"
		}
		return "[ ]"
	}
	// earlier picks a task written before, not far back, as people name the tasks near theirs.
	earlier := func(from []string) string { return from[max(0, len(from)-1-rng.IntN(min(len(from), 40)))] }
	switch convention {
	case ConventionChecklist:
		b.WriteString("# Roadmap\n")
		for phase := 1; len(g.ids) < n; phase++ {
			fmt.Fprintf(&b, "\n## Phase %d: Part %d\n\n", phase, phase)
			for i, size := 1, 5+rng.IntN(25); i <= size && len(g.ids) < n; i++ {
				id := fmt.Sprintf("%d.%d", phase, i)
				line := fmt.Sprintf("- %s %s Task %s", box(id), id, id)
				if len(g.ids) > 0 && rng.IntN(3) == 0 {
					dep := earlier(g.ids)
					line += " (depends: " + dep + ")"
					g.after[id] = []string{dep}
				} else {
					g.alone[id] = true
				}
				b.WriteString(line + "\n")
				g.ids = append(g.ids, id)
			}
		}
	case ConventionSpecKit, ConventionSpecKit + "+order":
		b.WriteString("# Tasks: Generated\n")
		stories := max(1, n/40)
		var phases [][]string
		names := []string{"Setup", "Foundational"}
		for s := 1; s <= stories; s++ {
			names = append(names, fmt.Sprintf("User Story %d - Story %d (Priority: P%d)", s, s, min(s, 3)))
		}
		names = append(names, "Polish & Cross-Cutting Concerns")
		per := max(1, n/len(names))
		t := 0
		for p, name := range names {
			fmt.Fprintf(&b, "\n## Phase %d: %s\n\n", p+1, name)
			var tasks []string
			for i := 0; i < per || (p == len(names)-1 && t < n); i++ {
				t++
				id := fmt.Sprintf("T%03d", t)
				line := "- " + box(id) + " " + id
				parallel := rng.IntN(2) == 0
				if parallel {
					line += " [P]"
				}
				if strings.HasPrefix(name, "User Story") {
					line += fmt.Sprintf(" [US%d]", p-1)
				}
				line += " Task " + id
				if len(g.ids) > 0 && rng.IntN(5) == 0 {
					dep := earlier(g.ids)
					line += " (depends on " + dep + ")"
					g.after[id] = append(g.after[id], dep)
				} else if !parallel {
					g.alone[id] = true
				}
				b.WriteString(line + "\n")
				tasks = append(tasks, id)
				g.ids = append(g.ids, id)
			}
			phases = append(phases, tasks)
		}
		// The phase rules: each phase after every phase before it, or, with the section, the stories
		// after Foundational only and Polish after all of them.
		// Each phase is written as waiting for the phase before it, or for the phases it needs:
		// what those wait for, it does too.
		for p, tasks := range phases {
			var needs []int
			switch {
			case p == 0:
			case convention == ConventionSpecKit || p < 2:
				needs = []int{p - 1}
			case p < len(phases)-1:
				needs = []int{1}
			default:
				for q := 2; q < p; q++ {
					needs = append(needs, q)
				}
			}
			for _, id := range tasks {
				g.afterGroups[id] = needs
			}
		}
		g.groups = phases
		if convention != ConventionSpecKit {
			b.WriteString("\n## Dependencies & Execution Order\n\n" +
				"- **Setup (Phase 1)**: No dependencies - can start immediately\n" +
				"- **Foundational (Phase 2)**: Depends on Setup completion - BLOCKS all user stories\n" +
				"- **User Stories (Phase 3+)**: All depend on Foundational phase completion\n" +
				"  - User stories can then proceed in parallel (if staffed)\n" +
				"- **Polish (Final Phase)**: Depends on all desired user stories being complete\n")
		}
	case ConventionGSD:
		phases := max(1, n/5)
		b.WriteString("# Roadmap: Generated\n\n## Phases\n\n")
		for p := 1; p <= phases; p++ {
			fmt.Fprintf(&b, "- [ ] **Phase %d: Part %d** - part %d\n", p, p, p)
		}
		b.WriteString("\n## Phase Details\n")
		var prev []string
		for p := 1; p <= phases; p++ {
			fmt.Fprintf(&b, "\n### Phase %d: Part %d\n", p, p)
			if p == 1 {
				b.WriteString("**Depends on:** Nothing (first phase)\n")
			} else {
				fmt.Fprintf(&b, "**Depends on:** Phase %d\n", p-1)
			}
			b.WriteString("Plans:\n")
			size := 3 + rng.IntN(5)
			if p == phases {
				size = max(1, n-len(g.ids))
			}
			waves := make([]int, size)
			for i := range waves {
				waves[i] = 1 + rng.IntN(3)
			}
			var plans []string
			before := len(g.ids) // a plan names a plan of an earlier phase: one of its own wave order is no plan's
			for i := 1; i <= size; i++ {
				id := fmt.Sprintf("%02d-%02d", p, i)
				line := fmt.Sprintf("- %s %s-PLAN.md — plan %s (Wave %d", box(id), id, id, waves[i-1])
				if before > 0 && rng.IntN(8) == 0 {
					dep := earlier(g.ids[:before])
					line += ", depends on " + dep
					g.after[id] = []string{dep}
				}
				b.WriteString(line + ")\n")
				plans = append(plans, id)
				g.ids = append(g.ids, id)
			}
			// A plan that names its own dependencies keeps them; else it waits for the earlier waves
			// of its phase, and the first wave for the phase before.
			for i, id := range plans {
				if _, own := g.after[id]; own {
					continue
				}
				var before []string
				for j, o := range plans {
					if waves[j] < waves[i] {
						before = append(before, o)
					}
				}
				if len(before) == 0 {
					before = prev
				}
				g.after[id] = before
				if len(before) == 0 {
					g.alone[id] = true
				}
			}
			prev = plans
		}
	case ConventionKiro:
		b.WriteString("# Implementation Plan\n\nTasks marked with * are optional.\n")
		kids := map[int][]string{} // required sub-tasks of each task number
		for parent := 1; len(g.ids) < n; parent++ {
			fmt.Fprintf(&b, "\n- %s %d. Parent %d\n", box(fmt.Sprint(parent)), parent, parent)
			var deps []string
			if parent > 1 && rng.IntN(3) == 0 {
				m := 1 + rng.IntN(parent-1)
				if len(kids[m]) > 0 {
					deps = kids[m]
				}
			}
			for k, size := 1, 1+rng.IntN(4); k <= size && len(g.ids) < n; k++ {
				id := fmt.Sprintf("%d.%d", parent, k)
				mark := box(id)
				if k > 1 && rng.IntN(5) == 0 {
					mark += "*"
					g.optional[id] = true
				} else {
					kids[parent] = append(kids[parent], id)
				}
				fmt.Fprintf(&b, "  - %s %s Sub-task %s\n    - _Requirements: %s_\n", mark, id, id, id)
				g.ids = append(g.ids, id)
				if deps != nil {
					g.after[id] = deps
				} else {
					g.alone[id] = true
				}
			}
			if deps != nil {
				fmt.Fprintf(&b, "  - Depends on task %s\n", strings.Split(deps[0], ".")[0])
			}
		}
	case ConventionOpenSpec:
		for section := 1; len(g.ids) < n; section++ {
			fmt.Fprintf(&b, "\n## %d. Section %d\n\n", section, section)
			for i, size := 1, 2+rng.IntN(6); i <= size && len(g.ids) < n; i++ {
				id := fmt.Sprintf("%d.%d", section, i)
				fmt.Fprintf(&b, "- %s %s Task %s\n", box(id), id, id)
				g.ids = append(g.ids, id)
				g.alone[id] = true
			}
		}
	default:
		panic("genPlans: convention " + convention)
	}
	g.src = []byte(b.String())
	return g
}
