package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPackageBoundaries holds the import rules of DESIGN.md, cmd → app → jobs → runner: the engine
// (runner/...) depends on none of the GitHub or queue code, jobs on none of the GitHub edge, and only
// app/... imports gin, go-github and ghinstallation directly.
func TestPackageBoundaries(t *testing.T) {
	const module = "github.com/akira-bot/akira/"
	list := func(args ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list"}, args...)...).Output()
		if err != nil {
			t.Fatalf("go list %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	forbiddenForRunner := []string{module + "app", module + "jobs", "github.com/gin-gonic/gin", "github.com/google/go-github", "github.com/hibiken/asynq", "github.com/bradleyfalzon/ghinstallation"}
	for _, dep := range list("-deps", "-test", module+"runner/...") {
		for _, bad := range forbiddenForRunner {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("runner/... depends on %s", dep)
			}
		}
	}
	forbiddenForJobs := []string{module + "app", module + "cmd", "github.com/gin-gonic/gin", "github.com/google/go-github", "github.com/bradleyfalzon/ghinstallation"}
	for _, dep := range list("-deps", "-test", module+"jobs/...") {
		for _, bad := range forbiddenForJobs {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("jobs/... depends on %s", dep)
			}
		}
	}
	// A run's and a task's status words are lifecycle's; templates reads them, never the other way.
	for _, dep := range list("-deps", module+"jobs/lifecycle") {
		if dep == module+"templates" {
			t.Errorf("jobs/lifecycle depends on %s: the status words are lifecycle's, and templates reads them", dep)
		}
	}
	// The flows of jobs/ are packages stacked one way: the root wires intake, intake reaches runs, runs	// reaches recovery and publish, and every flow reaches the shared packages below (queue, flow,
	// store, ports, lifecycle, ...), which reach no flow.
	layer := map[string]int{"jobs": 5, "jobs/intake": 4, "jobs/runs": 3, "jobs/recovery": 2, "jobs/publish": 1}
	for _, line := range list("-f", `{{.ImportPath}}:{{join .Imports ","}}`, module+"jobs/...") {
		pkg, imports, _ := strings.Cut(line, ":")
		from := strings.TrimPrefix(pkg, module)
		for _, imp := range strings.Split(imports, ",") {
			to, ours := strings.CutPrefix(imp, module)
			if !ours || !strings.HasPrefix(to, "jobs") {
				continue
			}
			if lt, isFlow := layer[to]; isFlow && lt >= layer[from] {
				t.Errorf("%s imports %s: a flow is reached only from a flow above it (jobs → intake → runs → recovery → publish)", from, to)
			}
		}
	}
	for _, pkg := range list(module + "...") {
		if pkg == module+"jobs/bridge" {
			t.Errorf("%s is back: app/gh implements jobs' interfaces with jobs' types, nothing converts between them", pkg)
		}
	}
	githubOnly := []string{"github.com/gin-gonic/gin", "github.com/google/go-github", "github.com/bradleyfalzon/ghinstallation"}
	for _, line := range list("-f", `{{.ImportPath}}:{{join .Imports ","}}`, module+"...") {
		pkg, imports, _ := strings.Cut(line, ":")
		if strings.HasPrefix(pkg, module+"app") {
			continue
		}
		for _, imp := range strings.Split(imports, ",") {
			for _, bad := range githubOnly {
				if imp == bad || strings.HasPrefix(imp, bad+"/") {
					t.Errorf("%s imports %s: only app/... may", pkg, imp)
				}
			}
		}
	}
}
