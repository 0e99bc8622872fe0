package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// EmbeddingsConfig is an OpenAI-compatible embeddings endpoint (OpenAI, Azure, Ollama, vLLM, …).
type EmbeddingsConfig struct {
	Model string
	// BaseURL defaults to DefaultOpenAIBaseURL; requests go to <BaseURL>/embeddings.
	BaseURL    string
	APIKey     string
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// Embedder turns texts into vectors through POST /embeddings, with the retries and key redaction of
// the model clients.
type Embedder struct {
	provider *openAIProvider
	endpoint string
	model    string
}

// embedBatch bounds the inputs of one request (OpenAI accepts 2048).
const embedBatch = 256

// NewEmbedder validates cfg and returns an embedder.
func NewEmbedder(cfg EmbeddingsConfig) (*Embedder, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("llm: embeddings: model is empty")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultOpenAIBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return nil, fmt.Errorf("llm: embeddings: base_url %q is not an http(s) URL without credentials", cfg.BaseURL)
	}
	if cfg.APIKey == "" && u.Hostname() == "api.openai.com" {
		return nil, errors.New("llm: embeddings: api key is empty: set the environment variable named by api_key_env")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	hc := &httpClient{provider: "openai", client: cfg.HTTPClient, secret: cfg.APIKey, retry: defaultRetryPolicy(), log: cfg.Logger}
	p, err := newOpenAI(Config{BaseURL: cfg.BaseURL, APIKey: cfg.APIKey, Model: cfg.Model}, hc)
	if err != nil {
		return nil, err
	}
	return &Embedder{provider: p, endpoint: joinURL(u, "embeddings"), model: cfg.Model}, nil
}

type embedRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
}

type embedResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
}

// Embed returns one vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float64, error) {
	out := make([][]float64, len(texts))
	for start := 0; start < len(texts); start += embedBatch {
		batch := texts[start:min(start+embedBatch, len(texts))]
		var resp embedResponse
		if err := e.provider.http.postJSON(ctx, e.endpoint, e.provider.header, embedRequest{Model: e.model, Input: batch, EncodingFormat: "float"}, &resp); err != nil {
			return nil, fmt.Errorf("llm: embeddings: %w", err)
		}
		if len(resp.Data) != len(batch) {
			return nil, fmt.Errorf("llm: embeddings: %d vectors for %d inputs", len(resp.Data), len(batch))
		}
		for _, d := range resp.Data {
			if d.Index < 0 || d.Index >= len(batch) || out[start+d.Index] != nil || len(d.Embedding) == 0 {
				return nil, fmt.Errorf("llm: embeddings: bad or repeated index %d", d.Index)
			}
			out[start+d.Index] = d.Embedding
		}
	}
	return out, nil
}
