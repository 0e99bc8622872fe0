package egress

import (
	"strings"
	"testing"
)

// The scanner finds a top-level "background" that is not false or null however the JSON spells
// it and however it is cut into chunks, and nothing else.
func TestMemberScanner(t *testing.T) {
	tests := []struct {
		body string
		want bool
	}{
		{`{"background":true}`, true},
		{`{"model":"m","input":"hi","background" : true,"stream":true}`, true},
		{"{\n  \"background\":\ttrue\n}", true},
		{`{"BackGround":true}`, true},
		{`{"backgr\u006fund":true}`, true},
		{`{"\u0062\u0061\u0063\u006b\u0067\u0072\u006f\u0075\u006e\u0064":true}`, true},
		{`{"background":"true"}`, true},
		{`{"background":1}`, true},
		{`{"background":{}}`, true},
		{`{"background":[true]}`, true},
		{`{"background":false,"background":true}`, true},
		{`{"input":"a \" quote","background":true}`, true},
		{`{"input":"a \\","background":true}`, true},
		{`{"a":{"b":[1,{"c":"}"}]},"background":true}`, true},
		{`{"background":false}`, false},
		{`{"background":null}`, false},
		{`{"model":"m","input":[{"role":"user","content":"set \"background\": true"}]}`, false},
		{`{"metadata":{"background":true}}`, false},
		{`{"input":[{"background":true}]}`, false},
		{`{"input":"background","x":true}`, false},
		{`{"x":"y","background_color":true}`, false},
		{`{"` + strings.Repeat("k", 500) + `":true}`, false},
		{`[{"background":true}]`, false},
	}
	for _, tt := range tests {
		whole, bytewise := responsesScan(), responsesScan()
		for i := range len(tt.body) {
			bytewise.feed([]byte{tt.body[i]})
		}
		whole.feed([]byte(tt.body))
		if got, found := inBackground(whole), inBackground(bytewise); got != tt.want || found != tt.want {
			t.Errorf("%s: found %v in one chunk, %v byte by byte, want %v", tt.body, got, found, tt.want)
		}
	}
}

// responsesScan is the scanner of a Responses call of a profile that allows no server tool.
func responsesScan() *bodyScan {
	return newBodyScan(&Model{Protocol: ProtocolOpenAI}, "/responses", false)
}

// inBackground says whether the scanner refused the request for background mode.
func inBackground(s *bodyScan) bool {
	r := s.refused.Load()
	return r != nil && r.reason == ReasonBackground
}

// The scanner reads every /responses body an agent sends (Codex sends its whole conversation each
// turn): its throughput bounds what the watch adds to a call.
func BenchmarkMemberScanner(b *testing.B) {
	code := strings.Repeat(`\tif err := run(ctx, \"a line of code\"); err != nil {\n\t\treturn fmt.Errorf(\"run: %w\", err)\n\t}\n`, 40)
	body := []byte(`{"model":"gpt-5","input":[` + strings.Repeat(`{"role":"user","content":[{"type":"input_text","text":"`+code+`"}]},`, 500) + `{}],"stream":true}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		s := responsesScan()
		for chunk := body; len(chunk) > 0; {
			n := min(32<<10, len(chunk))
			if s.feed(chunk[:n]); s.done() {
				b.Fatal("found")
			}
			chunk = chunk[n:]
		}
	}
}

func BenchmarkRouteCall(b *testing.B) {
	routes := modelRoutes(ProtocolOpenAI, nil)
	for b.Loop() {
		if _, _, why := routeCall(routes, "POST", "/model/responses"); why != "" {
			b.Fatal(why)
		}
	}
}
