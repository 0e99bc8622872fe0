package deploytest

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"

	"github.com/akira-bot/akira/runner/config"
)

// image is what the Dockerfile's worker stage provides, read from its instructions.
type image struct {
	stages      map[string]*instructions.Stage
	aptPackages []string
	// npm maps each globally installed package to its pinned version.
	npm      map[string]string
	copies   []*instructions.CopyCommand
	env      map[string]string
	programs []string
}

// npmPrograms are the commands the agent CLIs' npm packages install.
var npmPrograms = map[string][]string{
	"@anthropic-ai/claude-code": {"claude"},
	"@openai/codex":             {"codex"},
}

// aptPrograms are the commands of the worker's Debian packages that agents or verification run.
var aptPrograms = map[string][]string{
	"git": {"git"}, "bubblewrap": {"bwrap"}, "ripgrep": {"rg"}, "make": {"make"}, "gcc": {"gcc", "cc"},
	"g++": {"g++", "c++"}, "python3": {"python3"}, "python3-pytest": {"pytest-3"}, "curl": {"curl"}, "jq": {"jq"},
	"unzip": {"unzip"}, "pkg-config": {"pkg-config"},
}

func parseDockerfile(t *testing.T) *image {
	t.Helper()
	f, err := os.Open("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("parse Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(res.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile instructions: %v", err)
	}
	img := &image{stages: map[string]*instructions.Stage{}, npm: map[string]string{}, env: map[string]string{}}
	for i := range stages {
		img.stages[stages[i].Name] = &stages[i]
	}
	worker := img.stages["akira-worker"]
	if worker == nil {
		t.Fatalf("no akira-worker stage; stages: %v", stageNames(stages))
	}
	args := map[string]string{}
	for _, c := range worker.Commands {
		switch c := c.(type) {
		case *instructions.ArgCommand:
			for _, a := range c.Args {
				args[a.Key] = a.ValueString()
			}
		case *instructions.RunCommand:
			line := strings.Join(c.CmdLine, " ")
			if _, after, ok := strings.Cut(line, "apt-get install"); ok {
				for _, w := range strings.Fields(strings.Split(after, "&&")[0]) {
					if !strings.HasPrefix(w, "-") && w != "\\" {
						img.aptPackages = append(img.aptPackages, w)
					}
				}
			}
			if _, after, ok := strings.Cut(line, "npm install"); ok {
				for _, w := range strings.Fields(strings.Split(after, "&&")[0]) {
					if strings.HasPrefix(w, "-") || w == "\\" {
						continue
					}
					at := strings.LastIndex(w, "@")
					if at <= 0 {
						img.npm[w] = ""
						continue
					}
					version := w[at+1:]
					if m := regexp.MustCompile(`^\$\{(\w+)\}$`).FindStringSubmatch(version); m != nil {
						version = args[m[1]]
					}
					img.npm[w[:at]] = version
				}
			}
		case *instructions.CopyCommand:
			img.copies = append(img.copies, c)
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				img.env[kv.Key] = kv.Value
			}
		}
	}
	img.programs = []string{"sh", "bash", "env", "cat", "node", "npm", "npx", "go", "gofmt", "akira"}
	for _, p := range img.aptPackages {
		img.programs = append(img.programs, aptPrograms[p]...)
	}
	for p := range img.npm {
		img.programs = append(img.programs, npmPrograms[p]...)
	}
	return img
}

func stageNames(stages []instructions.Stage) []string {
	var out []string
	for _, s := range stages {
		out = append(out, s.Name)
	}
	return out
}

// checkAgentsInWorkerImage: every exec agent of an operator configuration that ships with Akira
// runs a program the worker image has.
func checkAgentsInWorkerImage(t *testing.T, what string, op config.Operator) {
	t.Helper()
	img := parseDockerfile(t)
	if len(op.Agents) == 0 {
		t.Errorf("%s has no agent", what)
	}
	for _, name := range op.AgentNames() {
		p := op.Agents[name]
		if p.Kind != "exec" {
			continue
		}
		prog := config.ProgramOf(p.Command)
		if prog == "" || !slices.Contains(img.programs, prog) {
			t.Errorf("%s: agent %q runs %q, which the worker image does not install (it has %v)", what, name, prog, img.programs)
		}
	}
}

// TestDockerfile: one Dockerfile, two targets; the worker has what agents and the verification
// commands Akira detects need, and pins every agent CLI.
func TestDockerfile(t *testing.T) {
	img := parseDockerfile(t)
	for _, target := range []string{"akira", "akira-worker"} {
		if img.stages[target] == nil {
			t.Errorf("no %q target", target)
		}
	}
	for _, pkg := range []string{"git", "bubblewrap", "ripgrep", "make", "gcc", "python3", "python3-pytest", "ca-certificates", "tini"} {
		if !slices.Contains(img.aptPackages, pkg) {
			t.Errorf("the worker image lacks the Debian package %s (it installs %v)", pkg, img.aptPackages)
		}
	}
	for pkg, version := range img.npm {
		if npmPrograms[pkg] == nil {
			t.Errorf("npm package %s: say which command it installs in npmPrograms", pkg)
		}
		if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(version) {
			t.Errorf("npm package %s is not pinned to a version (%q)", pkg, version)
		}
	}
	for _, pkg := range []string{"@anthropic-ai/claude-code", "@openai/codex"} {
		if _, ok := img.npm[pkg]; !ok {
			t.Errorf("the worker image lacks the agent CLI %s", pkg)
		}
	}
	// Go and Node come whole from their official images; the configuration is baked in.
	have := map[string]bool{}
	for _, c := range img.copies {
		for _, src := range c.SourcePaths {
			have[c.From+":"+src] = true
		}
	}
	for _, want := range []string{"build:/usr/local/go", "node:/usr/local/bin/node", "node:/usr/local/lib/node_modules", ":deploy/akira.yaml", "build:/out/akira"} {
		if !have[want] {
			t.Errorf("the worker stage does not COPY %s", want)
		}
	}
	if img.env["AKIRA_CONFIG"] != "/etc/akira/akira.yaml" || !strings.Contains(img.env["PATH"], "/usr/local/go/bin") {
		t.Errorf("worker environment = %v; want AKIRA_CONFIG on the baked configuration and Go on PATH", img.env)
	}
	// The configuration baked into the image names only agents the image has.
	data, err := os.ReadFile("../akira.yaml")
	if err != nil {
		t.Fatal(err)
	}
	op, err := config.ParseOperator(data)
	if err != nil {
		t.Fatalf("deploy/akira.yaml: %v", err)
	}
	checkAgentsInWorkerImage(t, "deploy/akira.yaml", op)
	// A user outside root, as the sandbox and the chart's runAsUser expect.
	for _, target := range []string{"akira", "akira-worker"} {
		var user string
		for _, c := range img.stages[target].Commands {
			if u, ok := c.(*instructions.UserCommand); ok {
				user = u.User
			}
		}
		if !strings.HasPrefix(user, "10001") {
			t.Errorf("target %s runs as %q; want uid 10001", target, user)
		}
	}
}
