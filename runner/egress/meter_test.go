package egress_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/akira-bot/akira/internal/modeltest"
	"github.com/akira-bot/akira/runner/egress"
)

// price is $3 per million input tokens and $15 per million output tokens, for every model.
func price(_ string, t egress.Tokens) (float64, bool) {
	return float64(t.Input)*3/1e6 + float64(t.Output)*15/1e6, true
}

// A call that produces a million output tokens costs $15 (and $0.003 of input).
const (
	scriptedInput  = 1000
	scriptedOutput = 1_000_000
	scriptedCost   = 15.003
)

// padding is the text a scripted answer streams after its client has gone: a megabyte, far more
// than the sockets hold, so the proxy's writes to the gone client fail long before the answer ends.
var padding = strings.Repeat("x", 4096)

const paddingEvents = 256

// held is a scripted model server whose answers stop at a point until the test says go: the test's
// client leaves there, and the rest of the answer (the bulk of it, then the usage) follows.
type held struct {
	srv     *httptest.Server
	arrived chan struct{} // a request has come and the head of its answer is out
	goOn    chan struct{}
	once    sync.Once
}

// newHeld starts a server that answers every request with head, then waits, then tail; a zero
// status means 200.
func newHeld(t *testing.T, contentType string, head func(w http.ResponseWriter), tail func(w http.ResponseWriter)) *held {
	t.Helper()
	h := &held{arrived: make(chan struct{}, 4), goOn: make(chan struct{})}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if head != nil {
			w.Header().Set("Content-Type", contentType)
			head(w)
			w.(http.Flusher).Flush()
		}
		h.arrived <- struct{}{}
		select {
		case <-h.goOn:
		case <-r.Context().Done():
			return
		}
		if head == nil {
			w.Header().Set("Content-Type", contentType)
		}
		tail(w)
	}))
	t.Cleanup(h.srv.Close)
	t.Cleanup(h.release)
	return h
}

func (h *held) release() { h.once.Do(func() { close(h.goOn) }) }

func event(w io.Writer, name string, data any) {
	b, _ := json.Marshal(data)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
}

// Scripted answers in the three APIs' real shapes: a head the client sees, the bulk, and the usage
// at the very end, where each API puts it.
var abandoned = []struct {
	name, protocol, path, body, contentType string
	head, tail                              func(w http.ResponseWriter)
}{
	{"anthropic stream", egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","stream":true}`, "text/event-stream",
		func(w http.ResponseWriter) {
			event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": "msg_1", "type": "message",
				"role": "assistant", "model": "m", "content": []any{}, "usage": map[string]any{"input_tokens": scriptedInput, "output_tokens": 1}}})
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		},
		func(w http.ResponseWriter) {
			for range paddingEvents {
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": padding}})
			}
			event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			event(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": scriptedOutput}})
			event(w, "message_stop", map[string]any{"type": "message_stop"})
		}},
	{"chat completions stream", egress.ProtocolOpenAI, "/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, "text/event-stream",
		func(w http.ResponseWriter) {
			event(w, "", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m", "usage": nil,
				"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}}}})
		},
		func(w http.ResponseWriter) {
			for range paddingEvents {
				event(w, "", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m", "usage": nil,
					"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": padding}}}})
			}
			event(w, "", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []any{},
				"usage": map[string]any{"prompt_tokens": scriptedInput, "completion_tokens": scriptedOutput}})
			fmt.Fprint(w, "data: [DONE]\n\n")
		}},
	{"responses stream", egress.ProtocolOpenAI, "/responses", `{"model":"m","stream":true}`, "text/event-stream",
		func(w http.ResponseWriter) {
			event(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": "r1", "model": "m", "status": "in_progress", "usage": nil}})
		},
		func(w http.ResponseWriter) {
			for range paddingEvents {
				event(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "m1", "delta": padding})
			}
			event(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": "r1", "model": "m", "status": "completed",
				"usage": map[string]any{"input_tokens": scriptedInput, "output_tokens": scriptedOutput}}})
		}},
	{"anthropic answer, not streamed", egress.ProtocolAnthropic, "/v1/messages", `{"model":"m"}`, "application/json",
		func(w http.ResponseWriter) {
			fmt.Fprint(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`)
		},
		func(w http.ResponseWriter) {
			fmt.Fprint(w, strings.Repeat(padding, paddingEvents))
			fmt.Fprintf(w, `"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d}}`, scriptedInput, scriptedOutput)
		}},
	{"openai answer, left before it began", egress.ProtocolOpenAI, "/chat/completions", `{"model":"m"}`, "application/json",
		nil,
		func(w http.ResponseWriter) {
			fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"%s"},"finish_reason":"stop"}],`,
				strings.Repeat(padding, paddingEvents))
			fmt.Fprintf(w, `"usage":{"prompt_tokens":%d,"completion_tokens":%d}}`, scriptedInput, scriptedOutput)
		}},
}

// A client that hangs up before the answer ends (an agent that closes the stream before Anthropic's
// message_delta, or is stopped) does not make the call cheaper: the provider bills the whole answer,
// so the proxy reads it on to its end and meters what it states.
func TestAbandonedCallMeteredWhole(t *testing.T) {
	for _, tt := range abandoned {
		t.Run(tt.name, func(t *testing.T) {
			up := newHeld(t, tt.contentType, tt.head, tt.tail)
			s := openModel(t, egress.Config{}, tt.protocol, up.srv.URL)
			ctx, cancel := context.WithCancel(context.Background())
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			req := modelRequest(t, s, tt.protocol, tt.path, tt.body).WithContext(ctx)
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := client.Do(req)
				if err != nil {
					return // left before the answer began
				}
				// Read a little of what came, then hang up.
				resp.Body.Read(make([]byte, 64))
				resp.Body.Close()
			}()
			<-up.arrived
			if tt.head == nil {
				cancel() // no answer yet: the client gives up waiting
			}
			<-done
			cancel()
			up.release()
			rep := closeWithin(t, s)
			if rep.Calls != 1 || rep.Estimated || rep.Tokens.Input != scriptedInput || rep.Tokens.Output != scriptedOutput {
				t.Errorf("report = %+v, want one call of %d input and %d output tokens, as stated", rep, scriptedInput, scriptedOutput)
			}
			if math.Abs(rep.CostUSD-scriptedCost) > 1e-9 {
				t.Errorf("cost = $%.4f, want $%.4f", rep.CostUSD, scriptedCost)
			}
		})
	}
}

// The proxy's reading on is bounded: an upstream that stops sending is cut DrainTimeout after the
// client left, and one that never stops after DrainBytes; the call is then metered from what came,
// and marked as an estimate.
func TestAbandonedCallBounded(t *testing.T) {
	start := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"model": "m",
			"usage": map[string]any{"input_tokens": scriptedInput, "output_tokens": 1}}})
		event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "abcdefgh"}})
		w.(http.Flusher).Flush()
	}
	tests := []struct {
		name string
		cfg  egress.Config
		// rest is the answer once the client has gone.
		rest    func(w http.ResponseWriter, r *http.Request)
		maxText int64 // the streamed text the proxy may have read at most
	}{
		{"an upstream that stalls", egress.Config{DrainTimeout: time.Second},
			func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, 8},
		{"an upstream that never ends", egress.Config{DrainBytes: 1 << 20},
			func(w http.ResponseWriter, r *http.Request) {
				for r.Context().Err() == nil {
					event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": padding}})
				}
			}, 8 + 1<<20 + 64<<10}, // the bound, and what a failed write to the gone client may have taken
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arrived, left := make(chan struct{}, 1), make(chan struct{})
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				start(w)
				arrived <- struct{}{}
				<-left
				tt.rest(w, r)
			}))
			defer up.Close()
			s := openModel(t, tt.cfg, egress.ProtocolAnthropic, up.URL)
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Do(modelRequest(t, s, egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			<-arrived
			resp.Body.Read(make([]byte, 64))
			resp.Body.Close()
			close(left)
			rep := closeWithin(t, s)
			if rep.Calls != 1 || !rep.Estimated || rep.EstimatedCalls != 1 || rep.Tokens.Input != scriptedInput {
				t.Fatalf("report = %+v, want one estimated call with the stated input", rep)
			}
			if min, max := int64(2), (tt.maxText+3)/4; rep.Tokens.Output < min || rep.Tokens.Output > max {
				t.Errorf("output = %d tokens, want between %d and %d (the text read, 4 bytes a token)", rep.Tokens.Output, min, max)
			}
		})
	}
}

// Chat Completions streams carry no usage unless asked: the proxy asks on the client's behalf, and
// a client that did not ask does not get the chunk it did not ask for (many read choices[0] of
// every chunk, and an empty choices breaks them), while one that asked gets it, and the rest of the
// request reaches the model as sent.
func TestChatStreamAsksForUsage(t *testing.T) {
	tests := []struct {
		name, body string
		// options are the stream_options the model must receive; "" for a request left as sent.
		options    string
		usageChunk bool
	}{
		{"no stream_options", `{"model":"m","stream":true,"messages":[]}`, `{"include_usage":true}`, false},
		{"include_usage false", `{"model":"m","stream":true,"stream_options":{"include_usage":false}}`, `{"include_usage":true}`, false},
		{"other options kept", `{"model":"m","stream":true,"stream_options":{"include_obfuscation":false}}`, `{"include_obfuscation":false,"include_usage":true}`, false},
		{"stream_options null", `{"model":"m","stream":true,"stream_options":null}`, `{"include_usage":true}`, false},
		{"asked by the client", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, "", true},
		{"not streamed", `{"model":"m","stream":false}`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := modeltest.NewOpenAI(t, "sk-real")
			s := openModel(t, egress.Config{}, egress.ProtocolOpenAI, fake.BaseURL())
			resp, err := http.DefaultClient.Do(modelRequest(t, s, egress.ProtocolOpenAI, "/chat/completions", tt.body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			rep := s.Close()
			sent := fake.Requests()[0].Body
			if tt.options == "" {
				if string(sent) != tt.body {
					t.Errorf("the model got %s, want the request as sent: %s", sent, tt.body)
				}
			} else {
				var got struct {
					StreamOptions json.RawMessage `json:"stream_options"`
					Model         string          `json:"model"`
				}
				if err := json.Unmarshal(sent, &got); err != nil || string(got.StreamOptions) != tt.options || got.Model != "m" {
					t.Errorf("the model got %s, want stream_options %s", sent, tt.options)
				}
			}
			if rep.Calls != 1 || rep.Estimated || rep.Tokens.Input != fake.Usage.Input || rep.Tokens.Output != fake.Usage.Output {
				t.Errorf("report = %+v, want the usage the model stated, %+v", rep, fake.Usage)
			}
			if !strings.Contains(tt.body, `"stream":true`) {
				return
			}
			// Read as a client that indexes choices[0] of every chunk does.
			var text strings.Builder
			usageChunks, done := 0, false
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue
				}
				if data == "[DONE]" {
					done = true
					continue
				}
				var chunk struct {
					Choices []struct {
						Delta struct{ Content string } `json:"delta"`
					} `json:"choices"`
					Usage *json.RawMessage `json:"usage"`
				}
				if err := json.Unmarshal([]byte(data), &chunk); err != nil {
					t.Fatalf("a chunk is not JSON: %s", data)
				}
				if len(chunk.Choices) == 0 {
					usageChunks++
					continue
				}
				text.WriteString(chunk.Choices[0].Delta.Content)
			}
			if !done || text.String() != "ok" {
				t.Errorf("the client got %q (done %v):\n%s", text.String(), done, b)
			}
			if want := map[bool]int{true: 1, false: 0}[tt.usageChunk]; usageChunks != want {
				t.Errorf("the client got %d chunks without choices, want %d:\n%s", usageChunks, want, b)
			}
		})
	}
}

// An answer that states no usage (an OpenAI-compatible server that ignores stream_options, a
// stream cut before its last event) is estimated from its bytes, the request's for the input and
// the streamed text's for the output, and the report says it is an estimate.
func TestUsageEstimatedFromBytes(t *testing.T) {
	text := strings.Repeat("estimate me ", 100)
	tests := []struct {
		name, protocol, path, body string
		answer                     func(w http.ResponseWriter)
		// input is the stated input, 0 when the estimate comes from the request's bytes.
		input int64
	}{
		{"chat stream from a server that ignores stream_options", egress.ProtocolOpenAI, "/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello there"}]}`,
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 0; i < len(text); i += 100 {
					event(w, "", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
						"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": text[i : i+100]}, "finish_reason": nil}}})
				}
				event(w, "", map[string]any{"id": "c1", "object": "chat.completion.chunk", "model": "m",
					"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "stop"}}})
				fmt.Fprint(w, "data: [DONE]\n\n")
			}, 0},
		{"anthropic stream cut after message_start", egress.ProtocolAnthropic, "/v1/messages", `{"model":"m","stream":true}`,
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				event(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{"model": "m",
					"usage": map[string]any{"input_tokens": 700, "output_tokens": 1}}})
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}})
				event(w, "error", map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
			}, 700},
		{"responses stream cut before response.completed", egress.ProtocolOpenAI, "/responses", `{"model":"m","stream":true,"input":"write it"}`,
			func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				event(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"model": "m", "usage": nil}})
				event(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "delta": text})
			}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				got = b
				mu.Unlock()
				tt.answer(w)
			}))
			defer up.Close()
			s := openModel(t, egress.Config{}, tt.protocol, up.URL)
			resp, err := http.DefaultClient.Do(modelRequest(t, s, tt.protocol, tt.path, tt.body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			rep := s.Close()
			mu.Lock()
			wantIn := (int64(len(got)) + 3) / 4
			mu.Unlock()
			if tt.input > 0 {
				wantIn = tt.input
			}
			wantOut := int64(len(text)+3) / 4
			if rep.Calls != 1 || rep.EstimatedCalls != 1 || !rep.Estimated || rep.Tokens.Input != wantIn || rep.Tokens.Output != wantOut {
				t.Errorf("report = %+v, want one estimated call of %d input and %d output tokens", rep, wantIn, wantOut)
			}
			if want, _ := price("m", egress.Tokens{Input: wantIn, Output: wantOut}); math.Abs(rep.CostUSD-want) > 1e-12 {
				t.Errorf("cost = %v, want the estimate priced, %v", rep.CostUSD, want)
			}
			js, _ := json.Marshal(rep)
			if !strings.Contains(string(js), `"estimated":true`) {
				t.Errorf("the report's JSON does not say it is an estimate: %s", js)
			}
		})
	}
}

// openModel opens a TCP session whose model route leads to base.
func openModel(t *testing.T, cfg egress.Config, protocol, base string) *egress.Session {
	t.Helper()
	p := egress.New(cfg)
	s, err := p.Open(egress.SessionConfig{TCP: true, Model: &egress.Model{Protocol: protocol, BaseURL: base, Key: "sk-real", KeyVar: "K", BaseURLVar: "B", Price: price}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func modelRequest(t *testing.T, s *egress.Session, protocol, path, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+s.Addr()+egress.ModelPath+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if protocol == egress.ProtocolAnthropic {
		req.Header.Set("X-Api-Key", s.Placeholder())
	} else {
		req.Header.Set("Authorization", "Bearer "+s.Placeholder())
	}
	return req
}

// closeWithin closes the session, which waits for the calls in flight to be metered; a guard ends
// the test if that never happens, rather than the suite's timeout.
func closeWithin(t *testing.T, s *egress.Session) egress.Report {
	t.Helper()
	got := make(chan egress.Report, 1)
	go func() { got <- s.Close() }()
	select {
	case rep := <-got:
		return rep
	case <-time.After(2 * time.Minute):
		t.Fatal("the session did not close: a call it waits for is not bounded")
		return egress.Report{}
	}
}

// What generates nothing and states no usage (the model list, a token count) is no call to meter,
// and so no estimate either.
func TestFreeEndpointsNotMetered(t *testing.T) {
	fake := modeltest.NewAnthropic(t, "sk-real")
	s := openModel(t, egress.Config{}, egress.ProtocolAnthropic, fake.BaseURL())
	for _, req := range []*http.Request{
		modelRequest(t, s, egress.ProtocolAnthropic, "/v1/messages/count_tokens", `{"model":"m","messages":[]}`),
		modelRequest(t, s, egress.ProtocolAnthropic, "/v1/models", ""),
	} {
		if req.URL.Path == egress.ModelPath+"/v1/models" {
			req.Method, req.Body, req.ContentLength = http.MethodGet, http.NoBody, 0
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode)
		}
	}
	if rep := s.Close(); rep.Calls != 0 || rep.Estimated || rep.Tokens != (egress.Tokens{}) {
		t.Errorf("report = %+v, want no call metered", rep)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("the model server saw %d requests, want 2", n)
	}
}

// The proxy reads a Chat Completions request whole only up to a bound (an agent could otherwise make
// the worker hold any amount): a larger one reaches the model as sent, and its answer, which then
// states no usage, is estimated.
func TestLargeChatRequestPassesAsIs(t *testing.T) {
	fake := modeltest.NewOpenAI(t, "sk-real")
	s := openModel(t, egress.Config{}, egress.ProtocolOpenAI, fake.BaseURL())
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("a", 9<<20) + `"}]}`
	resp, err := http.DefaultClient.Do(modelRequest(t, s, egress.ProtocolOpenAI, "/chat/completions", body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	rep := s.Close()
	if got := fake.Requests()[0].Body; string(got) != body {
		t.Errorf("the model got %d bytes, not the %d-byte request as sent", len(got), len(body))
	}
	if want := int64(len(body)+3) / 4; rep.Calls != 1 || !rep.Estimated || rep.Tokens.Input != want {
		t.Errorf("report = %+v, want one call estimated at %d input tokens", rep, want)
	}
}
