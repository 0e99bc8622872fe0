package lessons

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math"
	"sort"
	"sync"
)

// Embedder turns texts into vectors (runner/agent/llm.Embedder: an OpenAI-compatible endpoint).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float64, error)
}

// DefaultMinSimilarity is the cosine similarity below which a lesson is not relevant.
const DefaultMinSimilarity = 0.3

// maxCached bounds the vectors a Semantic ranker keeps (a few repositories' worth of lessons).
const maxCached = 4096

// Semantic ranks lessons by the cosine similarity of their embeddings to the task's. A lesson's
// vector is asked for once and kept in memory, keyed by its text, so a run asks the endpoint only
// for the task and for lessons it has not seen.
type Semantic struct {
	Embedder      Embedder
	MinSimilarity float64 // 0: DefaultMinSimilarity

	mu    sync.Mutex
	cache map[[32]byte][]float64
}

// Rank returns the lessons most similar to query, best first, at most max of them and no more than
// budget bytes of text in all.
func (s *Semantic) Rank(ctx context.Context, all []Lesson, query string, max, budget int) ([]Lesson, error) {
	if len(all) == 0 || query == "" {
		return nil, nil
	}
	keys := make([][32]byte, len(all))
	var missing []string
	var missingKeys [][32]byte
	s.mu.Lock()
	if s.cache == nil || len(s.cache) > maxCached {
		s.cache = map[[32]byte][]float64{}
	}
	for i, l := range all {
		keys[i] = sha256.Sum256([]byte(l.Text))
		if _, ok := s.cache[keys[i]]; !ok {
			missing, missingKeys = append(missing, l.Text), append(missingKeys, keys[i])
		}
	}
	s.mu.Unlock()
	vecs, err := s.Embedder.Embed(ctx, append(missing, query))
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missing)+1 {
		return nil, fmt.Errorf("lessons: %d vectors for %d texts", len(vecs), len(missing)+1)
	}
	q := vecs[len(vecs)-1]
	s.mu.Lock()
	for i, k := range missingKeys {
		s.cache[k] = vecs[i]
	}
	type scored struct {
		l   Lesson
		sim float64
	}
	floor := s.MinSimilarity
	if floor == 0 {
		floor = DefaultMinSimilarity
	}
	var hits []scored
	for i, l := range all {
		if sim := cosine(s.cache[keys[i]], q); sim >= floor {
			hits = append(hits, scored{l, sim})
		}
	}
	s.mu.Unlock()
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].sim > hits[j].sim })
	ranked := make([]Lesson, len(hits))
	for i, h := range hits {
		ranked[i] = h.l
	}
	return within(ranked, max, budget), nil
}

func cosine(a, b []float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}
