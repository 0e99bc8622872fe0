package llm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
)

func TestEmbedder(t *testing.T) {
	srv := llmtest.NewEmbeddings(t, "text-embedding-3-small", "sk-emb", llmtest.HashedWords(32))
	e, err := NewEmbedder(EmbeddingsConfig{Model: "text-embedding-3-small", BaseURL: srv.BaseURL(), APIKey: "sk-emb"})
	if err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	e.provider.http.retry.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }

	texts := make([]string, embedBatch+3) // two requests
	for i := range texts {
		texts[i] = "lesson about parsers number " + strings.Repeat("x", i%7+3)
	}
	srv.FailNext(1)
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) || len(vecs[0]) != 32 || len(waits) != 1 {
		t.Fatalf("%d vectors of %d dims after %d retries", len(vecs), len(vecs[0]), len(waits))
	}
	if got := srv.Inputs(); len(got) != len(texts) || got[embedBatch] != texts[embedBatch] {
		t.Errorf("the server saw %d inputs", len(got))
	}

	bad, _ := NewEmbedder(EmbeddingsConfig{Model: "text-embedding-3-small", BaseURL: srv.BaseURL(), APIKey: "sk-wrong-key"})
	_, err = bad.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "401") || strings.Contains(err.Error(), "sk-wrong-key") {
		t.Errorf("wrong key: %v", err)
	}
	if _, err := NewEmbedder(EmbeddingsConfig{Model: "m", BaseURL: "ftp://x"}); err == nil {
		t.Error("an ftp base URL was accepted")
	}
	if _, err := NewEmbedder(EmbeddingsConfig{Model: "m"}); err == nil || !strings.Contains(err.Error(), "api key is empty") {
		t.Errorf("OpenAI without a key: %v", err)
	}
}
