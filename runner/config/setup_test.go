package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseRepoSetup(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       Setup
		wantErr    string
	}{
		{"list", "setup:\n  - npm ci\n  - npm run build\n", Setup{Commands: []string{"npm ci", "npm run build"}}, ""},
		{"mapping", "setup:\n  commands: [go mod download]\n  timeout: 5m\n  network: none\n",
			Setup{Commands: []string{"go mod download"}, Timeout: Duration(5 * time.Minute), Network: "none"}, ""},
		{"unknown key", "setup:\n  command: [x]\n", Setup{}, `setup: unknown key "command"`},
		{"empty command", "setup:\n  - ' '\n", Setup{}, "setup: empty command"},
		{"bad network", "setup:\n  commands: [x]\n  network: everywhere\n", Setup{}, `setup.network: "everywhere"`},
		{"too long", "setup:\n  commands: [x]\n  timeout: 3h\n", Setup{}, "setup.timeout: 3h0m0s is more than 2h0m0s"},
		{"scalar", "setup: npm ci\n", Setup{}, "want a list of commands or a mapping"},
		{"snapshot off", "setup:\n  commands: [x]\n  snapshot: off\n", Setup{Commands: []string{"x"}, Snapshot: SnapshotOff}, ""},
		{"snapshot age", "setup:\n  commands: [x]\n  snapshot: 12h\n", Setup{Commands: []string{"x"}, Snapshot: SnapshotAge(12 * time.Hour)}, ""},
		{"snapshot bad", "setup:\n  commands: [x]\n  snapshot: sometimes\n", Setup{}, `line 3: setup.snapshot: "sometimes": want off or`},
		{"snapshot negative", "setup:\n  commands: [x]\n  snapshot: -1h\n", Setup{}, `line 3: setup.snapshot: "-1h"`},
		{"snapshot zero", "setup:\n  commands: [x]\n  snapshot: 0s\n", Setup{}, `line 3: setup.snapshot: "0s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := ParseRepo([]byte(tt.yaml))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(r.Setup.Commands, "|") != strings.Join(tt.want.Commands, "|") || r.Setup.Timeout != tt.want.Timeout || r.Setup.Network != tt.want.Network || r.Setup.Snapshot != tt.want.Snapshot {
				t.Errorf("setup = %+v, want %+v", r.Setup, tt.want)
			}
		})
	}
}
