package deploytest

import (
	"os"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// workflow is the part of a GitHub Actions workflow this test reads. yaml.v3 reads YAML 1.2, where
// the key `on` is a string (YAML 1.1 readers take it for true).
type workflow struct {
	On struct {
		Push struct {
			Tags []string `yaml:"tags"`
		} `yaml:"push"`
	} `yaml:"on"`
	Jobs map[string]struct {
		Needs    any `yaml:"needs"`
		Strategy struct {
			Matrix map[string][]string `yaml:"matrix"`
		} `yaml:"strategy"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestReleaseWorkflow: a version tag publishes the binaries for linux and darwin on amd64 and arm64
// with checksums, both Dockerfile targets with SBOM and provenance, and the chart with its
// appVersion set to the version the images are tagged with.
func TestReleaseWorkflow(t *testing.T) {
	data, err := os.ReadFile("../../.github/workflows/release.yml")
	if err != nil {
		t.Fatal(err)
	}
	var wf workflow
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatalf("release.yml: %v", err)
	}
	if !slices.Contains(wf.On.Push.Tags, "v*.*.*") {
		t.Errorf("release.yml runs on tags %v; want version tags", wf.On.Push.Tags)
	}
	bin := wf.Jobs["binaries"]
	var script string
	for _, s := range bin.Steps {
		script += s.Run + "\n"
	}
	for _, want := range []string{"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64", "sha256sum", "-X main.version=", "-X main.commit=", "-X main.date=", "gh release create"} {
		if !strings.Contains(script, want) {
			t.Errorf("the binaries job lacks %q", want)
		}
	}
	img := parseDockerfile(t)
	images := wf.Jobs["images"]
	targets := images.Strategy.Matrix["target"]
	if !slices.Equal(slices.Sorted(slices.Values(targets)), []string{"akira", "akira-worker"}) {
		t.Errorf("image targets = %v", targets)
	}
	for _, target := range targets {
		if img.stages[target] == nil {
			t.Errorf("image target %s is not a stage of the Dockerfile", target)
		}
	}
	var built, tagged bool
	for _, s := range images.Steps {
		if strings.HasPrefix(s.Uses, "docker/build-push-action@") {
			built = s.With["file"] == "deploy/Dockerfile" && s.With["sbom"] == "true" && strings.HasPrefix(s.With["provenance"], "mode=") &&
				s.With["push"] == "true" && strings.Contains(s.With["platforms"], "linux/arm64")
		}
		if strings.HasPrefix(s.Uses, "docker/metadata-action@") {
			tagged = strings.Contains(s.With["tags"], "type=semver,pattern={{version}}")
		}
	}
	if !built || !tagged {
		t.Errorf("images: pushed with SBOM and provenance for arm64 too = %v; tagged with the bare version = %v", built, tagged)
	}
	var chartScript string
	for _, s := range wf.Jobs["chart"].Steps {
		chartScript += s.Run
	}
	if !strings.Contains(chartScript, `--version "${VERSION#v}" --app-version "${VERSION#v}"`) || !strings.Contains(chartScript, "helm push") || !strings.Contains(chartScript, "oci://") {
		t.Errorf("the chart job does not package with appVersion = the images' tag and push to an OCI registry:\n%s", chartScript)
	}
}
