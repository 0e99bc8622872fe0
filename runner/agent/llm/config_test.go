package llm

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestNewValidation(t *testing.T) {
	ok := Config{Provider: "openai", Model: "gpt-4o", APIKey: "sk-validation-KEY"}
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // empty: valid
	}{
		{"valid", func(c *Config) {}, ""},
		{"anthropic", func(c *Config) { c.Provider = "Anthropic"; c.Model = "claude-sonnet-4-5" }, ""},
		{"local server needs no key", func(c *Config) { c.APIKey = ""; c.BaseURL = "http://localhost:11434/v1"; c.Model = "qwen2.5-coder" }, ""},
		{"no provider", func(c *Config) { c.Provider = "" }, "kind is empty"},
		{"exec is not ours", func(c *Config) { c.Provider = "exec" }, `kind "exec" is not an LLM provider`},
		{"no model", func(c *Config) { c.Model = " " }, "model is empty"},
		{"no key for the real API", func(c *Config) { c.APIKey = "" }, "api key is empty"},
		{"no key for the real API, explicit URL", func(c *Config) { c.APIKey = ""; c.BaseURL = "https://api.openai.com/v1/" }, "api key is empty"},
		{"bad base_url", func(c *Config) { c.BaseURL = "localhost:8080" }, "base_url"},
		{"credentials in base_url", func(c *Config) { c.BaseURL = "https://user:pw@example.com/v1" }, "must not contain credentials"},
		{"negative max_turns", func(c *Config) { c.MaxTurns = -1 }, "max_turns"},
		{"negative max_tokens", func(c *Config) { c.MaxTokens = -1 }, "max_tokens"},
		{"negative timeout", func(c *Config) { c.Timeout = -time.Second }, "timeout"},
		{"negative max_cost", func(c *Config) { c.MaxCostUSD = -1 }, "max_cost"},
		{"negative max_output_tokens", func(c *Config) { c.MaxOutputTokens = -1 }, "max_output_tokens"},
		{"negative price", func(c *Config) { c.Prices = map[string]Price{"m": {InputPerMTok: -1}} }, `prices["m"]`},
		{"max_cost needs a price", func(c *Config) { c.Model = "my-local-model"; c.MaxCostUSD = 1 }, `model "my-local-model" has no price`},
		{"max_cost with an operator price", func(c *Config) {
			c.Model = "my-local-model"
			c.MaxCostUSD = 1
			c.Prices = map[string]Price{"my-local-model": {}}
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			_, err := New(c)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if c.APIKey != "" && strings.Contains(err.Error(), c.APIKey) {
				t.Error("error contains the key")
			}
		})
	}
}

func TestConfigNeverPrintsTheKey(t *testing.T) {
	c := Config{Provider: "openai", Model: "m", APIKey: "sk-print-SECRET"}
	var logs strings.Builder
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("profile", "cfg", c)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), logs.String()} {
		if strings.Contains(s, "SECRET") || !strings.Contains(s, "[redacted]") {
			t.Errorf("printed config: %s", s)
		}
	}
}

func TestLookupPrice(t *testing.T) {
	table := map[string]Price{"gpt-4o": {2.5, 10}, "gpt-4o-mini": {0.15, 0.6}, "claude-opus-4": {15, 75}, "claude-opus-4-5": {5, 25}}
	tests := []struct {
		model string
		want  Price
		found bool
	}{
		{"gpt-4o", Price{2.5, 10}, true},
		{"gpt-4o-2024-08-06", Price{2.5, 10}, true},
		{"gpt-4o-mini-2024-07-18", Price{0.15, 0.6}, true},
		{"openai/gpt-4o-mini", Price{0.15, 0.6}, true},
		{"claude-opus-4-20250514", Price{15, 75}, true},
		{"claude-opus-4-5-20251101", Price{5, 25}, true},
		{"claude-opus-4-latest", Price{15, 75}, true},
		// A newer version is not priced as an older one.
		{"claude-opus-4-6", Price{}, false},
		{"gpt-4o-audio-preview", Price{}, false},
		{"llama3.1:8b", Price{}, false},
	}
	for _, tt := range tests {
		got, found := lookupPrice(table, tt.model)
		if got != tt.want || found != tt.found {
			t.Errorf("lookupPrice(%q) = %v, %v; want %v, %v", tt.model, got, found, tt.want, tt.found)
		}
	}
	if p, ok := lookupPrice(DefaultPrices, "claude-sonnet-4-5-20250929"); !ok || p.InputPerMTok == 0 {
		t.Errorf("default table lacks claude-sonnet-4-5: %v %v", p, ok)
	}
}

func TestEndpoints(t *testing.T) {
	tests := []struct {
		provider, base string
		wantURL        string
		wantHeader     map[string]string
		wantNewParam   bool
	}{
		{"openai", DefaultOpenAIBaseURL, "https://api.openai.com/v1/chat/completions",
			map[string]string{"Authorization": "Bearer k", "Api-Key": ""}, true},
		{"openai", "http://localhost:11434/v1/", "http://localhost:11434/v1/chat/completions",
			map[string]string{"Authorization": "Bearer k"}, false},
		{"openai", "https://res.openai.azure.com/openai/deployments/gpt4o?api-version=2024-10-21",
			"https://res.openai.azure.com/openai/deployments/gpt4o/chat/completions?api-version=2024-10-21",
			map[string]string{"Api-Key": "k", "Authorization": ""}, true},
		{"openai", "https://res.openai.azure.com/openai/v1", "https://res.openai.azure.com/openai/v1/chat/completions",
			map[string]string{"Api-Key": "k"}, true},
		{"anthropic", DefaultAnthropicBaseURL, "https://api.anthropic.com/v1/messages",
			map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", "Authorization": ""}, false},
		{"anthropic", "https://gateway.example.com/anthropic/v1", "https://gateway.example.com/anthropic/v1/messages",
			map[string]string{"X-Api-Key": "k"}, false},
	}
	for _, tt := range tests {
		cfg := Config{Provider: tt.provider, Model: "m", BaseURL: tt.base, APIKey: "k"}
		hc := &httpClient{}
		var (
			endpoint string
			header   http.Header
			newParam bool
		)
		if tt.provider == "openai" {
			p, err := newOpenAI(cfg, hc)
			if err != nil {
				t.Fatal(err)
			}
			endpoint, header, newParam = p.endpoint, p.header, p.newParam
		} else {
			p, err := newAnthropic(cfg, hc)
			if err != nil {
				t.Fatal(err)
			}
			endpoint, header = p.endpoint, p.header
		}
		if endpoint != tt.wantURL {
			t.Errorf("%s: endpoint %q, want %q", tt.base, endpoint, tt.wantURL)
		}
		for k, v := range tt.wantHeader {
			if header.Get(k) != v {
				t.Errorf("%s: header %s = %q, want %q", tt.base, k, header.Get(k), v)
			}
		}
		if newParam != tt.wantNewParam {
			t.Errorf("%s: max_completion_tokens = %v", tt.base, newParam)
		}
	}
}

func TestParseErrorBodies(t *testing.T) {
	tests := []struct {
		parse func([]byte) *APIError
		body  string
		want  APIError
	}{
		{parseOpenAIError, `{"error":{"message":"bad key","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			APIError{Message: "bad key", Type: "invalid_request_error", Code: "invalid_api_key"}},
		{parseOpenAIError, `{"error":{"message":"x","type":"t","code":429}}`, APIError{Message: "x", Type: "t", Code: "429"}},
		{parseOpenAIError, `{"error":"model 'x' not found"}`, APIError{Message: "model 'x' not found"}},
		{parseOpenAIError, `{"detail":"Not Found"}`, APIError{Message: "Not Found"}},
		{parseOpenAIError, `<html>`, APIError{}},
		{parseAnthropicError, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			APIError{Type: "overloaded_error", Message: "Overloaded"}},
		{parseAnthropicError, `{"type":"error","error":{"type":"rate_limit_error","message":"spend","details":{"error_code":"enforced_spend_limit_reached"}}}`,
			APIError{Type: "rate_limit_error", Message: "spend", Code: "enforced_spend_limit_reached"}},
	}
	for _, tt := range tests {
		if got := tt.parse([]byte(tt.body)); *got != tt.want {
			t.Errorf("parse(%s) = %+v, want %+v", tt.body, *got, tt.want)
		}
	}
	if retryableStatus(429, &APIError{Code: "enforced_spend_limit_reached"}) || !retryableStatus(429, &APIError{Type: "rate_limit_error"}) ||
		!retryableStatus(529, &APIError{}) || retryableStatus(404, &APIError{}) {
		t.Error("retryableStatus")
	}
}
