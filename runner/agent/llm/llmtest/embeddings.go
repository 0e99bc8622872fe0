package llmtest

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"unicode"
)

// Embeddings is a fake OpenAI embeddings endpoint (POST /v1/embeddings) that checks each request
// as the API documents it and answers with the vectors embed gives.
type Embeddings struct {
	t     testing.TB
	model string
	key   string
	embed func(string) []float64
	srv   *httptest.Server

	mu     sync.Mutex
	inputs []string
	// Fail, while above zero, answers that many requests with 503 first.
	fail int
}

// NewEmbeddings starts the endpoint for model, requiring key ("" for none).
func NewEmbeddings(t testing.TB, model, key string, embed func(string) []float64) *Embeddings {
	t.Helper()
	e := &Embeddings{t: t, model: model, key: key, embed: embed}
	e.srv = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.srv.Close)
	return e
}

// BaseURL is what an operator would configure.
func (e *Embeddings) BaseURL() string { return e.srv.URL + "/v1" }

// Inputs are every text embedded so far, in order.
func (e *Embeddings) Inputs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.inputs...)
}

// FailNext answers the next n requests with 503 Service Unavailable.
func (e *Embeddings) FailNext(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fail = n
}

func (e *Embeddings) serve(w http.ResponseWriter, r *http.Request) {
	bad := func(msg string) {
		e.t.Errorf("embeddings request violates the protocol: %s", msg)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		bad(r.Method + " " + r.URL.Path + ", want POST /v1/embeddings")
		return
	}
	if e.key != "" && r.Header.Get("Authorization") != "Bearer "+e.key {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`))
		return
	}
	e.mu.Lock()
	if e.fail > 0 {
		e.fail--
		e.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":null}}`))
		return
	}
	e.mu.Unlock()
	raw, _ := io.ReadAll(r.Body)
	var body map[string]json.RawMessage
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&body); err != nil {
		bad("body is not JSON")
		return
	}
	for k := range body {
		switch k {
		case "model", "input", "encoding_format", "dimensions", "user":
		default:
			bad("unexpected field " + k)
			return
		}
	}
	var model, format string
	json.Unmarshal(body["model"], &model)
	if model != e.model {
		bad("model is " + model)
		return
	}
	if f, ok := body["encoding_format"]; ok {
		if json.Unmarshal(f, &format) != nil || (format != "float" && format != "base64") {
			bad("encoding_format is " + string(f))
			return
		}
	}
	var inputs []string
	if err := json.Unmarshal(body["input"], &inputs); err != nil {
		var one string
		if json.Unmarshal(body["input"], &one) != nil {
			bad("input is neither a string nor an array of strings")
			return
		}
		inputs = []string{one}
	}
	if len(inputs) == 0 || len(inputs) > 2048 {
		bad("input must hold 1 to 2048 texts")
		return
	}
	e.mu.Lock()
	e.inputs = append(e.inputs, inputs...)
	e.mu.Unlock()
	var data []any
	tokens := 0
	for i, in := range inputs {
		if in == "" {
			bad("input holds an empty string")
			return
		}
		tokens += len(strings.Fields(in))
		data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": e.embed(in)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": e.model,
		"usage": map[string]any{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// HashedWords is a deterministic stand-in for a model's embedding: the words of a text hashed
// into dim dimensions, normalised. Texts sharing words point the same way; others are orthogonal.
func HashedWords(dim int) func(string) []float64 {
	return func(s string) []float64 {
		v := make([]float64, dim)
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if len(w) < 3 {
				continue
			}
			h := fnv.New32a()
			h.Write([]byte(w))
			v[h.Sum32()%uint32(dim)]++
		}
		n := 0.0
		for _, x := range v {
			n += x * x
		}
		if n > 0 {
			for i := range v {
				v[i] /= math.Sqrt(n)
			}
		}
		return v
	}
}
