package config

import (
	"strings"
	"testing"
)

// TestAPIPaths: the calls an operator adds to an exec profile's model route are checked at start,
// and an error names the profile, the key and the route.
func TestAPIPaths(t *testing.T) {
	tests := []struct {
		name, yaml, wantErr string
	}{
		{name: "more model routes", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: anthropic\n    api_paths: ['POST /v1/messages/batches', 'GET /v1/messages/batches/*']\n"},
		{name: "model routes without api", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api_paths: ['POST /v1/files']\n",
			wantErr: "agents.c: api_paths: needs api"},
		{name: "model route that is no plain path", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: anthropic\n    api_paths: ['POST /v1/messages/../files']\n",
			wantErr: `agents.c: api_paths: route "POST /v1/messages/../files": path "/v1/messages/../files" is not a clean absolute path`},
		{name: "model route without a method", yaml: "agents:\n  c:\n    kind: exec\n    command: claude -p\n    api: openai\n    api_paths: [/responses/compact]\n",
			wantErr: `agents.c: api_paths: route "/responses/compact": want METHOD /path`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseOperator([]byte(tt.yaml))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
