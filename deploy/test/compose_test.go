package deploytest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// TestCompose loads deploy/docker-compose.yml with the Compose specification's loader, next to the
// env file `akira setup` writes, and checks what it starts.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	// The project directory as an operator has it: the compose file's directory with setup's files.
	dir := filepath.Join(t.TempDir(), "deploy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	envFile := "GITHUB_APP_ID=1\nGITHUB_WEBHOOK_SECRET=s\nGITHUB_PRIVATE_KEY_PATH=/home/me/akira.private-key.pem\nREDIS_PASSWORD=pw\n"
	if err := os.WriteFile(filepath.Join(dir, "akira.env"), []byte(envFile), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env map[string]string) (*types.Project, error) {
		return loader.LoadWithContext(context.Background(), types.ConfigDetails{
			WorkingDir:  dir,
			ConfigFiles: []types.ConfigFile{{Filename: filepath.Join(dir, "docker-compose.yml"), Content: data}},
			Environment: env,
		}, func(o *loader.Options) { o.SetProjectName("akira", true) })
	}
	// Without REDIS_PASSWORD the file refuses to load, naming it.
	if _, err := load(map[string]string{}); err == nil || !strings.Contains(err.Error(), "REDIS_PASSWORD") {
		t.Errorf("loaded without REDIS_PASSWORD: %v", err)
	}
	p, err := load(map[string]string{"REDIS_PASSWORD": "pw"})
	if err != nil {
		t.Fatalf("load compose: %v", err)
	}
	if names := p.ServiceNames(); !slices.Equal(slices.Sorted(slices.Values(names)), []string{"redis", "web", "worker"}) {
		t.Fatalf("services = %v", names)
	}
	img := parseDockerfile(t)
	targets := map[string]string{"web": "akira", "worker": "akira-worker"}
	for name, target := range targets {
		s := p.Services[name]
		if s.Build == nil || s.Build.Target != target || s.Build.Dockerfile != "deploy/Dockerfile" || s.Build.Context != filepath.Dir(dir) {
			t.Errorf("%s builds %+v; want target %s of deploy/Dockerfile from the repository root", name, s.Build, target)
		}
		if img.stages[target] == nil {
			t.Errorf("%s's target %s is not a stage of the Dockerfile", name, target)
		}
		// The key is mounted where the environment says it is, over what the env file says.
		if v := s.Environment["GITHUB_PRIVATE_KEY_PATH"]; v == nil || *v != "/etc/akira/private-key.pem" {
			t.Errorf("%s GITHUB_PRIVATE_KEY_PATH = %v", name, v)
		}
		mounted := false
		for _, v := range s.Volumes {
			if v.Target == "/etc/akira/private-key.pem" && v.ReadOnly && v.Source == filepath.Join(dir, "akira.private-key.pem") {
				mounted = true
			}
		}
		if !mounted {
			t.Errorf("%s does not mount setup's key read-only at /etc/akira/private-key.pem: %+v", name, s.Volumes)
		}
		if v := s.Environment["REDIS_URL"]; v == nil || *v != "redis://redis:6379/0" {
			t.Errorf("%s REDIS_URL = %v", name, v)
		}
		if v := s.Environment["GITHUB_APP_ID"]; v == nil || *v != "1" {
			t.Errorf("%s does not read the env file akira setup writes: GITHUB_APP_ID = %v", name, v)
		}
		if dep, ok := s.DependsOn["redis"]; !ok || dep.Condition != types.ServiceConditionHealthy {
			t.Errorf("%s does not wait for a healthy Redis", name)
		}
	}
	redis := p.Services["redis"]
	cmd := strings.Join(redis.Command, " ")
	if !strings.Contains(cmd, "--appendonly yes") || !strings.Contains(cmd, "--requirepass pw") || redis.HealthCheck == nil {
		t.Errorf("redis command %q; want the append-only file and the password, with a health check", cmd)
	}
	if w := p.Services["worker"]; !slices.Contains(w.SecurityOpt, "seccomp=unconfined") {
		t.Errorf("the worker keeps Docker's seccomp profile, which forbids bubblewrap's namespaces: %v", w.SecurityOpt)
	}
	ports := p.Services["web"].Ports
	if len(ports) != 2 || ports[0].Target != 8080 || ports[1].Target != 9090 || ports[1].HostIP != "127.0.0.1" {
		t.Errorf("web ports = %+v; want the webhook's 8080 published and the admin address's 9090 on 127.0.0.1 only", ports)
	}
	for _, name := range []string{"web", "worker"} {
		if v := p.Services[name].Environment["AKIRA_ADMIN_ADDR"]; v == nil || *v != ":9090" {
			t.Errorf("%s: AKIRA_ADMIN_ADDR = %v", name, v)
		}
	}
}
