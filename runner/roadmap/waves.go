package roadmap

import "container/heap"

// MayRunBeside says whether a task may share a wave with other tasks: it is marked [P], or it names
// what it needs (a dependency its author wrote, or a GSD wave or phase). A dependency that only keeps
// spec-kit's phases in order holds a task back without making it one that may run beside others. A
// plain checklist item runs alone, in its order.
func (t *Task) MayRunBeside() bool {
	if t.Parallel {
		return true
	}
	if len(t.DependsFrom) != len(t.Depends) {
		// A task built by hand rather than parsed.
		return len(t.Depends) > 0
	}
	for _, d := range t.DependsFrom {
		if !d.PhaseOrder {
			return true
		}
	}
	return false
}

// Waves lists the waves a run goes in with up to maxParallel tasks at once, when every task
// succeeds: the next ready task (highest priority, then the execution order) starts a wave, and when
// it may run beside others the other ready tasks that may join it, in the execution order. Done
// tasks are not listed; optional tasks are left out as a run leaves them out, and so are the tasks
// that wait for them. It is what a run does, computed in O((tasks + dependencies) · log tasks).
func (r *Roadmap) Waves(maxParallel int) [][]string {
	maxParallel = max(maxParallel, 1)
	ids := r.Order
	if len(ids) != len(r.Tasks) {
		ids = make([]string, len(r.Tasks))
		for i, t := range r.Tasks {
			ids[i] = t.ID
		}
	}
	pos := make(map[string]int, len(ids))
	tasks := make([]*Task, len(ids))
	for i, id := range ids {
		if _, dup := pos[id]; dup {
			continue
		}
		pos[id] = i
		tasks[i] = r.Task(id)
	}
	const (
		pending = iota
		done
		leftOut
	)
	state := make([]int, len(ids))
	for i, t := range tasks {
		switch {
		case t == nil:
			state[i] = leftOut
		case t.Done:
			state[i] = done
		case t.Optional:
			state[i] = leftOut
		}
	}
	unmet := make([]int, len(ids))
	dependents := make([][]int, len(ids))
	for i, t := range tasks {
		if state[i] != pending {
			continue
		}
		for _, d := range t.Depends {
			j, ok := pos[d]
			switch {
			case !ok || state[j] == leftOut:
				unmet[i]++ // never met: the task waits for ever, as in a run
			case state[j] == pending:
				unmet[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	// first holds the ready tasks by priority, then order; beside the ready tasks that may run beside
	// others, by order. A task taken from one stays in the other until it comes to the top.
	first := &readyHeap{prio: func(i int) int { return tasks[i].Priority }}
	beside := &readyHeap{prio: func(int) int { return 0 }}
	push := func(i int) {
		heap.Push(first, i)
		if tasks[i].MayRunBeside() {
			heap.Push(beside, i)
		}
	}
	for i := range tasks {
		if state[i] == pending && unmet[i] == 0 {
			push(i)
		}
	}
	taken := make([]bool, len(ids))
	var waves [][]string
	for {
		lead := -1
		for first.Len() > 0 {
			if i := heap.Pop(first).(int); !taken[i] {
				lead = i
				break
			}
		}
		if lead < 0 {
			return waves
		}
		taken[lead] = true
		wave := []int{lead}
		if tasks[lead].MayRunBeside() {
			for len(wave) < maxParallel && beside.Len() > 0 {
				if i := heap.Pop(beside).(int); !taken[i] {
					taken[i] = true
					wave = append(wave, i)
				}
			}
		}
		names := make([]string, len(wave))
		for k, i := range wave {
			names[k] = ids[i]
		}
		waves = append(waves, names)
		for _, i := range wave {
			for _, j := range dependents[i] {
				if unmet[j]--; unmet[j] == 0 {
					push(j)
				}
			}
		}
	}
}

// readyHeap holds task positions in the execution order: the highest prio first, then the lowest
// position.
type readyHeap struct {
	xs   []int
	prio func(int) int
}

func (h *readyHeap) Len() int { return len(h.xs) }
func (h *readyHeap) Less(i, j int) bool {
	a, b := h.xs[i], h.xs[j]
	if pa, pb := h.prio(a), h.prio(b); pa != pb {
		return pa > pb
	}
	return a < b
}
func (h *readyHeap) Swap(i, j int) { h.xs[i], h.xs[j] = h.xs[j], h.xs[i] }
func (h *readyHeap) Push(x any)    { h.xs = append(h.xs, x.(int)) }
func (h *readyHeap) Pop() any {
	x := h.xs[len(h.xs)-1]
	h.xs = h.xs[:len(h.xs)-1]
	return x
}
