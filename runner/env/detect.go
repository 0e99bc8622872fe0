package env

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/akira-bot/akira/runner/verify"
)

// Proposal is the install command proposed for a repository without `setup:`, and the file it was
// chosen from.
type Proposal struct {
	Install string `json:"install,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Detect proposes the install command of the project in dir from the files at its root. The first
// match wins, in a fixed order, so the choice is predictable; a Node project's package manager is the
// one whose lock file is there.
func Detect(dir string) Proposal {
	exists := func(name string) bool {
		fi, err := os.Lstat(filepath.Join(dir, name))
		return err == nil && fi.Mode().IsRegular()
	}
	switch {
	case exists("go.mod"):
		return Proposal{"go mod download", "go.mod"}
	case exists("package.json"):
		switch {
		case exists("pnpm-lock.yaml"):
			return Proposal{"pnpm install --frozen-lockfile", "package.json + pnpm-lock.yaml"}
		case exists("yarn.lock"):
			return Proposal{"yarn install --frozen-lockfile", "package.json + yarn.lock"}
		case exists("package-lock.json"):
			return Proposal{"npm ci", "package.json + package-lock.json"}
		}
		return Proposal{"npm install", "package.json"}
	case exists("pyproject.toml"):
		switch {
		case exists("uv.lock"):
			return Proposal{"uv sync --frozen", "pyproject.toml + uv.lock"}
		case exists("poetry.lock"):
			return Proposal{"poetry install --no-interaction", "pyproject.toml + poetry.lock"}
		}
		return Proposal{"python3 -m venv .venv && .venv/bin/pip install -e .", "pyproject.toml"}
	case exists("requirements.txt"):
		return Proposal{"python3 -m venv .venv && .venv/bin/pip install -r requirements.txt", "requirements.txt"}
	case exists("Cargo.toml"):
		return Proposal{"cargo fetch", "Cargo.toml"}
	}
	for _, name := range []string{"GNUmakefile", "makefile", "Makefile"} {
		if exists(name) {
			return Proposal{"make", name}
		}
	}
	return Proposal{}
}

// StartingConfig is a first .github/akira.yml for the project in dir (akira init): the install
// command Detect proposes as setup and the test command verify.Detect proposes as verify, each with
// the file it was chosen from, or commented examples when nothing was found.
func StartingConfig(dir string) string {
	var b strings.Builder
	b.WriteString("# Akira's configuration of this repository; see docs/configuration.md, \"Repository environments\", in Akira's repository.\n\n")
	b.WriteString("# setup runs once per run, in the sandbox, after the clone and before the first task.\n")
	if p := Detect(dir); p.Install != "" {
		fmt.Fprintf(&b, "# Detected from %s.\nsetup:\n  commands:\n    - %s\n  timeout: 15m\n", p.Reason, yamlString(p.Install))
	} else {
		b.WriteString("# setup:\n#   commands:\n#     - make deps\n#   timeout: 15m\n")
	}
	b.WriteString("\n# verify runs after each task without verify lines of its own, and on the base branch before\n" +
		"# the first task of a run (a red base stops the run before any agent call).\n")
	if cmd, reason := verify.Detect(dir); cmd != "" {
		fmt.Fprintf(&b, "# Detected from %s.\nverify:\n  - %s\n", reason, yamlString(cmd))
	} else {
		b.WriteString("# verify:\n#   - make test\n")
	}
	return b.String()
}

// yamlString quotes s when YAML would read it as something other than the string it is.
func yamlString(s string) string {
	if strings.ContainsAny(s, ":#'\"{}[]&*!|>%@`") || strings.TrimSpace(s) != s {
		return strconv.Quote(s)
	}
	return s
}
