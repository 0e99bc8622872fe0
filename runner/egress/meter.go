package egress

import (
	"bytes"
	"encoding/json"
	"io"
	"sync/atomic"
	"time"
)

// Tokens are what one or more model calls consumed. Input counts every input token, cached or not;
// CacheRead and CacheWrite say how many of them were read from or written to the provider's cache.
type Tokens struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_tokens,omitempty"`
	CacheWrite int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum.
func (t Tokens) Add(o Tokens) Tokens {
	return Tokens{Input: t.Input + o.Input, Output: t.Output + o.Output, CacheRead: t.CacheRead + o.CacheRead, CacheWrite: t.CacheWrite + o.CacheWrite}
}

// maxMeteredJSON bounds what is kept of a non-streamed response to read its usage, and of one
// event of a streamed one; past it the call's usage is estimated from its bytes.
const maxMeteredJSON = 16 << 20

// bytesPerToken is how an estimate turns bytes into tokens: about four characters of English text
// or code per token for the models' tokenizers (OpenAI's rule of thumb). The request is counted
// with its JSON around the text, which errs on the side of more tokens, not fewer.
const bytesPerToken = 4

// usageDoc is the part of a model response (or of one event of a streamed one) that says what was
// used, and the text it adds. The field names are those of the three APIs:
//   - Anthropic Messages: usage.{input_tokens, output_tokens, cache_creation_input_tokens,
//     cache_read_input_tokens}; streamed, message_start carries message.usage (the input, and one
//     output token) and the final message_delta the call's usage; text comes in
//     content_block_delta's delta;
//   - OpenAI Chat Completions: usage.{prompt_tokens, completion_tokens,
//     prompt_tokens_details.cached_tokens}; streamed, a last chunk with empty choices (only with
//     stream_options.include_usage); text comes in choices[].delta;
//   - OpenAI Responses: usage.{input_tokens, output_tokens, input_tokens_details.cached_tokens};
//     streamed, response.completed (or .incomplete, .failed) carries response.usage; text comes in
//     the delta of response.*.delta events.
//
// Beyond tokens: the service tier the call ran at (OpenAI's service_tier beside the usage,
// Anthropic's usage.service_tier) and the uses of server tools (Anthropic's
// usage.server_tool_use.{web_search_requests, web_fetch_requests}; the web_search_call and
// file_search_call items of a Responses answer's output).
type usageDoc struct {
	Model       string          `json:"model"`
	ServiceTier string          `json:"service_tier"`
	Usage       *rawUsage       `json:"usage"`
	Output      []outputItem    `json:"output"`
	Message     *usageDocN      `json:"message"`
	Response    *usageDocN      `json:"response"`
	Delta       json.RawMessage `json:"delta"`
	Choices     []struct {
		Delta json.RawMessage `json:"delta"`
	} `json:"choices"`
}

type usageDocN struct {
	Model       string       `json:"model"`
	ServiceTier string       `json:"service_tier"`
	Usage       *rawUsage    `json:"usage"`
	Output      []outputItem `json:"output"`
}

type outputItem struct {
	Type string `json:"type"`
}

type rawUsage struct {
	ServiceTier   string `json:"service_tier"`
	ServerToolUse *struct {
		WebSearchRequests int64 `json:"web_search_requests"`
		WebFetchRequests  int64 `json:"web_fetch_requests"`
	} `json:"server_tool_use"`
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	PromptTokens             int64 `json:"prompt_tokens"`
	CompletionTokens         int64 `json:"completion_tokens"`
	PromptTokensDetails      *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

// tokens normalises one usage object. Anthropic counts cached input apart from input_tokens; the
// OpenAI APIs count it inside.
func (u *rawUsage) tokens(protocol string) Tokens {
	if protocol == ProtocolAnthropic {
		return Tokens{
			Input:      u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			Output:     u.OutputTokens,
			CacheRead:  u.CacheReadInputTokens,
			CacheWrite: u.CacheCreationInputTokens,
		}
	}
	t := Tokens{Input: u.InputTokens + u.PromptTokens, Output: u.OutputTokens + u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		t.CacheRead += d.CachedTokens
	}
	if d := u.InputTokensDetails; d != nil {
		t.CacheRead += d.CachedTokens
	}
	return t
}

// callMeter reads one model call as it passes through: the model and the usage the response states
// and, for when it states none or not all of it, the bytes of the request and of the text the
// response streamed. Within one response every figure only grows (a stream repeats cumulative
// counts), so the largest seen of each is the response's.
type callMeter struct {
	protocol string
	// generates: the request may make the model generate (a POST other than a token count), so
	// an answer without its usage is estimated rather than left out.
	generates bool
	model     string
	tokens    Tokens
	// final: the response stated the usage of the whole call (not only Anthropic's message_start,
	// which knows the input and one output token).
	final bool
	// tier is the service tier the response says the call ran at; uses, how often it used each
	// server tool. scan is the request's (nil in tests of the meter alone).
	tier string
	uses map[string]int64
	scan *bodyScan
	// request counts the request body's bytes as they go out; response the body's as they come in;
	// text the generated text of a stream's deltas.
	request        atomic.Int64
	response, text int64
	// For the attempt's timeline: when the call started, what it asked for, the status answered.
	start        time.Time
	method, path string
	status       int
}

func (m *callMeter) observe(doc []byte, sse bool) {
	var d usageDoc
	if json.Unmarshal(doc, &d) != nil {
		return
	}
	if sse {
		m.text += textBytes(d.Delta)
		for _, c := range d.Choices {
			m.text += textBytes(c.Delta)
		}
	}
	model, u, final, tier, output := d.Model, d.Usage, d.Usage != nil, d.ServiceTier, d.Output
	for _, n := range []*usageDocN{d.Message, d.Response} {
		if n != nil {
			if n.Model != "" {
				model = n.Model
			}
			if n.ServiceTier != "" {
				tier = n.ServiceTier
			}
			if n.Usage != nil {
				u, output = n.Usage, n.Output
				// Responses' response.usage is the call's; Anthropic's message.usage (message_start) is not.
				final = final || n == d.Response
			}
		}
	}
	if model != "" {
		m.model = model
	}
	if u != nil && u.ServiceTier != "" {
		tier = u.ServiceTier
	}
	if tier != "" {
		m.tier = fold(tier)
	}
	if u == nil {
		return
	}
	// The uses of server tools: counts that only grow within a response, as its tokens do. Items of
	// an output are counted only in the answer that carries the usage, which lists them all.
	uses := map[string]int64{}
	if st := u.ServerToolUse; st != nil {
		uses["web_search"], uses["web_fetch"] = st.WebSearchRequests, st.WebFetchRequests
	}
	for _, it := range output {
		if tool, ok := outputItemTools[it.Type]; ok {
			uses[tool]++
		}
	}
	for tool, n := range uses {
		if n > m.uses[tool] {
			if m.uses == nil {
				m.uses = map[string]int64{}
			}
			m.uses[tool] = n
		}
	}
	t := u.tokens(m.protocol)
	m.final = m.final || final
	m.tokens = Tokens{Input: max(m.tokens.Input, t.Input), Output: max(m.tokens.Output, t.Output),
		CacheRead: max(m.tokens.CacheRead, t.CacheRead), CacheWrite: max(m.tokens.CacheWrite, t.CacheWrite)}
}

// usage is the call's usage, and whether it is an estimate: what the response stated when it
// stated the whole call's, else the larger of what it stated and what its bytes suggest (the
// request's for the input, the streamed text's, or the whole answer's when not streamed, for the
// output). ok is false for a request that generates nothing and states no usage (a model list, a
// token count): there is nothing to meter.
func (m *callMeter) usage(sse bool) (t Tokens, estimated, ok bool) {
	if m.final {
		return m.tokens, false, true
	}
	if !m.generates {
		return Tokens{}, false, false
	}
	t = m.tokens
	out := m.response
	if sse {
		out = m.text
	}
	if t.Input == 0 {
		t.Input = ceilDiv(m.request.Load(), bytesPerToken)
	}
	t.Output = max(t.Output, ceilDiv(out, bytesPerToken))
	return t, true, true
}

func ceilDiv(n, d int64) int64 { return (n + d - 1) / d }

// textBytes is the length of the text in a delta: a string (Responses), or the strings of an object
// but for the words that only say what kind it is or why it stopped.
func textBytes(raw json.RawMessage) int64 {
	if len(raw) == 0 || raw[0] == 'n' {
		return 0
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return 0
	}
	return stringBytes(v)
}

func stringBytes(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v))
	case []any:
		var n int64
		for _, e := range v {
			n += stringBytes(e)
		}
		return n
	case map[string]any:
		var n int64
		for k, e := range v {
			switch k {
			case "type", "role", "id", "index", "stop_reason", "stop_sequence", "finish_reason", "signature":
				continue
			}
			n += stringBytes(e)
		}
		return n
	}
	return 0
}

// meteredBody passes a response body through while its meter reads it: line by line as server-sent
// events when streamed, else the whole JSON document at the end. With dropUsage it also holds each
// event back until it is complete and leaves out the usage-only chunk that the proxy asked for on
// the client's behalf (see askForUsage). done is called once, at EOF or Close, with what was read.
//
// Close before EOF means the client went away: the body is then read on to its end, at most
// drainBytes more and for as long as the call's context lasts (the proxy bounds that), so that what
// the provider bills for is what is metered.
type meteredBody struct {
	body       io.ReadCloser
	meter      *callMeter
	sse        bool
	dropUsage  bool
	drainBytes int64
	// draining is called when Close starts reading on for a client that went away.
	draining func()
	done     func(*callMeter, bool)

	line  bytes.Buffer // a partial SSE line, or the JSON document so far
	over  bool         // the JSON document outgrew maxMeteredJSON
	eof   bool
	ended bool

	// With dropUsage: the event being assembled, and what is ready for the client.
	event, out bytes.Buffer
	passing    bool // the event outgrew maxMeteredJSON: passed on as it comes, unfiltered
	err        error
	buf        []byte
}

func (b *meteredBody) Read(p []byte) (int, error) {
	if !b.dropUsage {
		n, err := b.body.Read(p)
		b.take(p[:n], err)
		return n, err
	}
	for b.out.Len() == 0 && b.err == nil {
		if b.buf == nil {
			b.buf = make([]byte, 32<<10)
		}
		n, err := b.body.Read(b.buf)
		b.take(b.buf[:n], err)
		b.filter(b.buf[:n])
		if err != nil {
			b.err = err
			b.out.Write(b.event.Bytes()) // an unfinished last event goes as it is
			b.event.Reset()
		}
	}
	if b.out.Len() > 0 {
		return b.out.Read(p)
	}
	return 0, b.err
}

// take meters bytes read from upstream.
func (b *meteredBody) take(p []byte, err error) {
	if len(p) > 0 {
		b.meter.response += int64(len(p))
		b.feed(p)
	}
	if err == io.EOF {
		b.eof = true
	}
	if err != nil {
		b.finish()
	}
}

func (b *meteredBody) Close() error {
	if !b.eof && !b.ended {
		b.drain()
	}
	b.finish()
	return b.body.Close()
}

// drain reads what the client left unread, for the meter alone.
func (b *meteredBody) drain() {
	if b.draining != nil {
		b.draining()
	}
	buf := make([]byte, 32<<10)
	for left := b.drainBytes; left > 0; {
		n, err := b.body.Read(buf[:min(int64(len(buf)), left)])
		left -= int64(n)
		if n > 0 {
			b.meter.response += int64(n)
			b.feed(buf[:n])
		}
		if err != nil {
			b.eof = err == io.EOF
			return
		}
	}
}

func (b *meteredBody) feed(p []byte) {
	if b.over {
		return
	}
	if !b.sse {
		if b.line.Len()+len(p) > maxMeteredJSON {
			b.over, b.line = true, bytes.Buffer{}
			return
		}
		b.line.Write(p)
		return
	}
	b.line.Write(p)
	for {
		line, err := b.line.ReadBytes('\n')
		if err != nil {
			// An incomplete line waits for the next read; one longer than any event is dropped.
			if len(line) > maxMeteredJSON {
				line = nil
			}
			b.line.Reset()
			b.line.Write(line)
			return
		}
		b.meterLine(line)
	}
}

func (b *meteredBody) meterLine(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		b.meter.observe(data, true)
	}
}

// filter moves complete events from p to what the client reads, but for the usage-only chunk.
func (b *meteredBody) filter(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			b.event.Write(p)
			if b.event.Len() > maxMeteredJSON {
				b.passing = true
				b.out.Write(b.event.Bytes())
				b.event.Reset()
			}
			return
		}
		line := p[:i+1]
		p = p[i+1:]
		b.event.Write(line)
		if len(bytes.TrimRight(line, "\r\n")) > 0 {
			continue
		}
		// A blank line ends the event.
		if b.passing || !usageOnlyChunk(b.event.Bytes()) {
			b.out.Write(b.event.Bytes())
		}
		b.passing = false
		b.event.Reset()
	}
}

// usageOnlyChunk reports whether an event is the Chat Completions chunk that carries the usage and
// no choice: what stream_options.include_usage adds before [DONE].
func usageOnlyChunk(event []byte) bool {
	if !bytes.Contains(event, []byte(`"usage"`)) {
		return false
	}
	var data []byte
	for _, line := range bytes.Split(event, []byte("\n")) {
		if d, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:")); ok {
			data = append(data, bytes.TrimSpace(d)...)
		}
	}
	var chunk struct {
		Choices *[]json.RawMessage `json:"choices"`
		Usage   json.RawMessage    `json:"usage"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return false
	}
	return chunk.Choices != nil && len(*chunk.Choices) == 0 && len(chunk.Usage) > 0 && string(chunk.Usage) != "null"
}

func (b *meteredBody) finish() {
	if b.ended {
		return
	}
	b.ended = true
	if b.sse {
		if b.line.Len() > 0 {
			b.meterLine(b.line.Bytes())
		}
	} else if !b.over {
		b.meter.observe(b.line.Bytes(), false)
	}
	b.line = bytes.Buffer{}
	b.done(b.meter, b.sse)
}

// askForUsage makes a streamed Chat Completions request ask for its usage (stream_options.
// include_usage), which the API leaves out of a stream unless asked. It returns the body to send
// and whether it added the request: then the usage chunk is the proxy's, and the client, which did
// not ask for it, does not get it (many clients read choices[0] of every chunk).
func askForUsage(body []byte) ([]byte, bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body, false
	}
	var stream bool
	if json.Unmarshal(req["stream"], &stream) != nil || !stream {
		return body, false
	}
	var opts map[string]json.RawMessage
	if json.Unmarshal(req["stream_options"], &opts) != nil || opts == nil {
		opts = map[string]json.RawMessage{} // absent, null or not an object: the API's own default
	}
	var asked bool
	if json.Unmarshal(opts["include_usage"], &asked) == nil && asked {
		return body, false
	}
	opts["include_usage"] = json.RawMessage("true")
	var err error
	if req["stream_options"], err = json.Marshal(opts); err != nil {
		return body, false
	}
	out, err := json.Marshal(req)
	if err != nil {
		return body, false
	}
	return out, true
}
