package env

import (
	"os"
	"path/filepath"
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
