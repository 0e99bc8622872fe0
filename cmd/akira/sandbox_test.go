package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/config"
	"github.com/akira-bot/akira/runner/sandbox"
)

func TestCheckOutOfSandbox(t *testing.T) {
	box := sandbox.Config{Mode: sandbox.Bubblewrap, ReadOnly: []string{"/srv/tools"}}
	tests := []struct {
		key, workDir string
		cfg          sandbox.Config
		refused      bool
	}{
		{"/run/secrets/key.pem", "/var/lib/akira", box, false},
		{"/opt/akira/key.pem", "/var/lib/akira", box, true},
		{"/srv/tools/key.pem", "/var/lib/akira", box, true},
		{"/var/lib/akira/key.pem", "/var/lib/akira", box, true},
		{"/opt/akira/key.pem", "/var/lib/akira", sandbox.Config{Mode: sandbox.None}, false},
		{"", "/var/lib/akira", box, false},
	}
	for _, tt := range tests {
		err := checkOutOfSandbox("GITHUB_PRIVATE_KEY_PATH", tt.key, tt.cfg, tt.workDir)
		if (err != nil) != tt.refused || (err != nil && !strings.Contains(err.Error(), tt.key)) {
			t.Errorf("key %s in mode %s: %v, want refused %v", tt.key, tt.cfg.Mode, err, tt.refused)
		}
	}
}

func TestResolveSandbox(t *testing.T) {
	missing := func() error { return errors.New("sandbox: bubblewrap is not installed") }
	works := func() error { return nil }
	tests := []struct {
		name      string
		file      string
		c         sandboxChoice
		want      sandbox.Mode
		warns     bool
		wantError bool
	}{
		{"serve, unset, bubblewrap runs", "", sandboxChoice{explicitNone: true, available: works}, sandbox.Bubblewrap, false, false},
		{"serve, unset, no bubblewrap", "", sandboxChoice{explicitNone: true, available: missing}, "", false, true},
		{"serve, none in the file", "none", sandboxChoice{explicitNone: true, available: missing}, sandbox.None, true, false},
		{"serve, bubblewrap asked, missing", "bubblewrap", sandboxChoice{explicitNone: true, available: missing}, "", false, true},
		{"run, unset, no bubblewrap", "", sandboxChoice{available: missing}, sandbox.None, true, false},
		{"run, flag beats the file", "bubblewrap", sandboxChoice{flag: "none", available: works}, sandbox.None, true, false},
		{"run, unknown flag", "", sandboxChoice{flag: "jail", available: works}, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op := config.DefaultOperator()
			op.Sandbox.Mode = tt.file
			got, warning, err := resolveSandbox(op, tt.c)
			if (err != nil) != tt.wantError || got.Mode != tt.want || (warning != "") != tt.warns {
				t.Errorf("= %q, warning %q, %v; want %q, warns %v, error %v", got.Mode, warning, err, tt.want, tt.warns, tt.wantError)
			}
		})
	}
}
