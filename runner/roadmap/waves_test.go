package roadmap

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestWavesKeepEveryDependency is a property test over generated plans of every convention: the
// waves of a run with up to N tasks at once never put a task before, or beside, one it must come
// after — by its own words or by its convention's rules (spec-kit's phases, GSD's waves and phase
// dependencies), which the generator knows without asking the parser; a plain task runs alone; every
// task that can run runs once; and the execution order agrees.
func TestWavesKeepEveryDependency(t *testing.T) {
	for _, conv := range genConventions {
		for seed := range 25 {
			rng := rand.New(rand.NewPCG(uint64(seed), 45))
			g := genPlans(conv, 20+rng.IntN(300), rng)
			t.Run(fmt.Sprintf("%s/%d", conv, seed), func(t *testing.T) {
				r, err := Parse("tasks.md", g.src)
				if err != nil {
					t.Fatalf("%v\n%s", err, g.src)
				}
				ids := make([]string, len(r.Tasks))
				for i, task := range r.Tasks {
					ids[i] = task.ID
				}
				if !slices.Equal(ids, g.ids) {
					t.Fatalf("tasks read %q, written %q", ids, g.ids)
				}
				checkOrder(t, g, r.Order)
				for _, n := range []int{1, 2, 8} {
					checkWaves(t, g, r.Waves(n), n)
				}
			})
		}
	}
}

// afterOf is everything a generated task must come after.
func afterOf(g genPlan, id string) []string {
	out := g.after[id]
	for _, k := range g.afterGroups[id] {
		out = append(append([]string{}, out...), g.groups[k]...)
	}
	return out
}

func checkOrder(t *testing.T, g genPlan, order []string) {
	t.Helper()
	at := map[string]int{}
	for i, id := range order {
		at[id] = i
	}
	for _, id := range g.ids {
		for _, d := range afterOf(g, id) {
			if at[d] > at[id] {
				t.Errorf("execution order puts %s before %s, which it comes after", id, d)
			}
		}
	}
}

func checkWaves(t *testing.T, g genPlan, waves [][]string, n int) {
	t.Helper()
	wave := map[string]int{}
	for i, w := range waves {
		if len(w) == 0 || len(w) > n {
			t.Fatalf("wave %d has %d tasks, up to %d allowed", i+1, len(w), n)
		}
		for _, id := range w {
			if _, twice := wave[id]; twice {
				t.Fatalf("%s runs twice", id)
			}
			if g.done[id] || g.optional[id] {
				t.Errorf("%s is done or optional, and runs", id)
			}
			if g.alone[id] && len(w) > 1 {
				t.Errorf("%s, a plain task, shares wave %d: %q", id, i+1, w)
			}
			wave[id] = i
		}
	}
	// blocked: a task that waits, through what it comes after, for an optional task never runs.
	blocked := map[string]bool{}
	for _, id := range g.ids {
		for _, d := range afterOf(g, id) {
			if g.optional[d] || blocked[d] {
				blocked[id] = true
			}
		}
	}
	for _, id := range g.ids {
		i, runs := wave[id]
		if !runs {
			if !g.done[id] && !g.optional[id] && !blocked[id] {
				t.Errorf("%s never runs", id)
			}
			continue
		}
		for _, d := range afterOf(g, id) {
			if j, ok := wave[d]; !g.done[d] && (!ok || j >= i) {
				t.Errorf("with %d at once, %s runs in wave %d, not after %s (wave %d, ran %v)", n, id, i+1, d, j+1, ok)
			}
		}
	}
}
