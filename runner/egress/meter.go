package egress

import (
	"bytes"
	"encoding/json"
	"io"
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

// maxMeteredJSON bounds what is kept of a non-streamed response to read its usage; a response
// beyond it passes through unmetered (and is reported as such).
const maxMeteredJSON = 16 << 20

// usageDoc is the part of a model response (or of one event of a streamed one) that says what was
// used. The field names are those of the three APIs:
//   - Anthropic Messages: usage.{input_tokens, output_tokens, cache_creation_input_tokens,
//     cache_read_input_tokens}; streamed, message_start carries message.usage and each
//     message_delta the cumulative usage so far;
//   - OpenAI Chat Completions: usage.{prompt_tokens, completion_tokens,
//     prompt_tokens_details.cached_tokens}; streamed, the last chunk (with include_usage);
//   - OpenAI Responses: usage.{input_tokens, output_tokens, input_tokens_details.cached_tokens};
//     streamed, response.completed carries response.usage.
type usageDoc struct {
	Model    string     `json:"model"`
	Usage    *rawUsage  `json:"usage"`
	Message  *usageDocN `json:"message"`
	Response *usageDocN `json:"response"`
}

type usageDocN struct {
	Model string    `json:"model"`
	Usage *rawUsage `json:"usage"`
}

type rawUsage struct {
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

// callMeter reads one model response as it passes through and keeps the model and the usage it
// states. Within one response every figure only grows (a stream repeats cumulative counts), so
// the largest seen of each is the response's.
type callMeter struct {
	protocol string
	model    string
	tokens   Tokens
	seen     bool
}

func (m *callMeter) observe(doc []byte) {
	var d usageDoc
	if json.Unmarshal(doc, &d) != nil {
		return
	}
	model, u := d.Model, d.Usage
	for _, n := range []*usageDocN{d.Message, d.Response} {
		if n != nil {
			if n.Model != "" {
				model = n.Model
			}
			if n.Usage != nil {
				u = n.Usage
			}
		}
	}
	if model != "" {
		m.model = model
	}
	if u == nil {
		return
	}
	t := u.tokens(m.protocol)
	m.seen = true
	m.tokens = Tokens{Input: max(m.tokens.Input, t.Input), Output: max(m.tokens.Output, t.Output),
		CacheRead: max(m.tokens.CacheRead, t.CacheRead), CacheWrite: max(m.tokens.CacheWrite, t.CacheWrite)}
}

// meteredBody passes a response body through unchanged while its meter reads it: line by line as
// server-sent events when streamed, else the whole JSON document at the end. done is called once,
// at EOF or Close, with what was read.
type meteredBody struct {
	body   io.ReadCloser
	meter  *callMeter
	sse    bool
	buf    bytes.Buffer // a partial SSE line, or the JSON document so far
	over   bool
	done   func(*callMeter)
	called bool
}

func (b *meteredBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 {
		b.feed(p[:n])
	}
	if err != nil {
		b.finish()
	}
	return n, err
}

func (b *meteredBody) Close() error {
	b.finish()
	return b.body.Close()
}

func (b *meteredBody) feed(p []byte) {
	if b.over {
		return
	}
	if !b.sse {
		if b.buf.Len()+len(p) > maxMeteredJSON {
			b.over, b.buf = true, bytes.Buffer{}
			return
		}
		b.buf.Write(p)
		return
	}
	b.buf.Write(p)
	for {
		line, err := b.buf.ReadBytes('\n')
		if err != nil {
			// An incomplete line waits for the next read; one longer than any event is dropped.
			if len(line) > maxMeteredJSON {
				line = nil
			}
			b.buf.Reset()
			b.buf.Write(line)
			return
		}
		b.line(line)
	}
}

func (b *meteredBody) line(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
	if !ok {
		return
	}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '{' {
		b.meter.observe(data)
	}
}

func (b *meteredBody) finish() {
	if b.called {
		return
	}
	b.called = true
	if b.sse {
		if b.buf.Len() > 0 {
			b.line(b.buf.Bytes())
		}
	} else if !b.over {
		b.meter.observe(b.buf.Bytes())
	}
	b.buf = bytes.Buffer{}
	b.done(b.meter)
}
