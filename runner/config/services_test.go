package config

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseRepoServices(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    Services
		wantErr string
	}{
		{"short form in order", "services:\n  redis: redis-server --port $PORT\n  cache: memcached -p $PORT\n",
			Services{{Name: "redis", Command: "redis-server --port $PORT"}, {Name: "cache", Command: "memcached -p $PORT"}}, ""},
		{"mapping", "services:\n  postgres:\n    init: [initdb -D $AKIRA_SERVICE_DIR/data]\n    command: postgres -p $PORT\n    timeout: 90s\n",
			Services{{Name: "postgres", Command: "postgres -p $PORT", Init: []string{"initdb -D $AKIRA_SERVICE_DIR/data"}, Timeout: Duration(90 * time.Second)}}, ""},
		{"unknown key", "services:\n  redis:\n    cmd: redis-server\n", nil, `services.redis: unknown key "cmd"`},
		{"no command", "services:\n  redis:\n    timeout: 5s\n", nil, "services.redis: no command"},
		{"bad name", "services:\n  Redis-1: redis-server\n", nil, `services: name "Redis-1"`},
		{"list", "services:\n  - redis-server\n", nil, "services: want a mapping"},
		{"too long", "services:\n  pg:\n    command: postgres\n    timeout: 1h\n", nil, "services.pg.timeout: 1h0m0s: want at most 10m0s"},
		{"empty init", "services:\n  pg:\n    command: postgres\n    init: ['']\n", nil, "services.pg.init: empty command"},
		{"too many", "services:\n" + func() string {
			var b strings.Builder
			for i := range MaxServices + 1 {
				b.WriteString("  s" + string(rune('a'+i)) + ": x\n")
			}
			return b.String()
		}(), nil, "services: 9 services, at most 8"},
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
			if !reflect.DeepEqual(r.Services, tt.want) {
				t.Errorf("services = %+v, want %+v", r.Services, tt.want)
			}
		})
	}
}
