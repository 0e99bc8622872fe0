package runner

import (
	"path"
	"sort"

	"github.com/akira-bot/akira/runner/roadmap"
)

// How much of a task's plan and spec files a prompt gets.
const (
	maxContextFile  = 24 << 10
	maxContextTotal = 48 << 10
)

// contextFile is a file of the repository a task's prompt includes.
type contextFile struct {
	Path, Text string
}

// contextFor finds the files a task names as its plan (GSD's NN-MM-PLAN.md, looked for under
// .planning/) and, for spec-kit tasks, the spec.md and plan.md beside the tasks file, and reads them
// from the workspace within the budget. A file that is missing is left out: the plan still runs.
func (e *engine) contextFor(t *roadmap.Task) []contextFile {
	var paths []string
	for _, name := range t.Context {
		if p := e.findPlanFile(name); p != "" {
			paths = append(paths, p)
		}
	}
	if e.rm.Convention == roadmap.ConventionSpecKit && e.roadmapPath != "" {
		dir := path.Dir(e.roadmapPath)
		for _, name := range []string{"spec.md", "plan.md"} {
			paths = append(paths, path.Join(dir, name))
		}
	}
	var out []contextFile
	used := 0
	for _, p := range paths {
		if used >= maxContextTotal {
			break
		}
		data, more, err := e.ws.ReadHead(p, min(maxContextFile, maxContextTotal-used))
		if err != nil {
			continue
		}
		text := string(data)
		if more {
			text += "\n[… the rest of the file is not shown …]"
		}
		used += len(data)
		out = append(out, contextFile{Path: p, Text: text})
	}
	return out
}

// findPlanFile looks for a plan file by name where GSD keeps them: .planning/phases/<phase>/,
// .planning/, then beside the roadmap.
func (e *engine) findPlanFile(name string) string {
	if path.Base(name) != name || name == "" {
		return "" // only a bare file name: a task cannot point the prompt at any file it likes
	}
	candidates, _ := e.ws.Glob(".planning/phases/*/" + name)
	sort.Strings(candidates)
	for _, p := range append(candidates, ".planning/"+name, path.Join(path.Dir(e.roadmapPath), name)) {
		if _, _, err := e.ws.ReadHead(p, 0); err == nil {
			return p
		}
	}
	return ""
}
