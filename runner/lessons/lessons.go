// Package lessons is a repository's memory: what people taught Akira in earlier runs (the guidance
// of a retry that then succeeded, notes written with /akira remember), ranked against a task so the
// relevant ones reach its prompt. Ranking is BM25 over words, in process; a store keeps the lessons
// of one repository only.
package lessons

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"
)

// Lesson is one thing learnt, with where it came from.
type Lesson struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Source says where it came from ("retry guidance for 1.2 Add the parser", "note").
	Source string `json:"source"`
	Author string `json:"author,omitempty"`
	// Run is the run that learnt it, when a run did.
	Run string `json:"run,omitempty"`
	// Link points at where it was said (the comment), when known.
	Link    string    `json:"link,omitempty"`
	Created time.Time `json:"created"`
}

// Store keeps the lessons of one repository.
type Store interface {
	List(ctx context.Context) ([]Lesson, error)
	Add(ctx context.Context, l Lesson) (Lesson, error)
	Forget(ctx context.Context, id string) (bool, error)
}

// MaxLessons caps a repository's lessons; the oldest go first.
const MaxLessons = 200

// MaxText caps one lesson's text.
const MaxText = 2000

// NewID makes a short lesson id, easy to type in /akira forget.
func NewID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "L" + hex.EncodeToString(b)
}

// IDFor is the lesson id of something taught once (a review comment): adding it again replaces it.
func IDFor(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "L" + hex.EncodeToString(sum[:4])
}

// Normalize fills in an id and a date, and caps the text.
func Normalize(l Lesson, now time.Time) Lesson {
	if l.ID == "" {
		l.ID = NewID()
	}
	if l.Created.IsZero() {
		l.Created = now.UTC()
	}
	l.Text = strings.TrimSpace(l.Text)
	if r := []rune(l.Text); len(r) > MaxText {
		l.Text = string(r[:MaxText]) + "…"
	}
	return l
}

var stopwords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "that": true, "this": true, "from": true, "into": true,
	"are": true, "was": true, "not": true, "but": true, "its": true, "your": true, "you": true,
	"all": true, "any": true, "can": true, "has": true, "have": true, "when": true, "then": true, "than": true,
	"add": true, "make": true, "task": true,
}

// words are the terms of a text for ranking: lower-case runs of letters and digits, three or more
// long, without stop words.
func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '-' }) {
		w = strings.Trim(w, "-_")
		if len([]rune(w)) >= 3 && !stopwords[w] {
			out = append(out, w)
		}
	}
	return out
}

// Rank returns the lessons relevant to query (a task's title, notes and criteria), best first: at
// most max of them, and no more than budget bytes of text in all. A lesson sharing no word with the
// query is never relevant.
func Rank(all []Lesson, query string, max, budget int) []Lesson {
	q := map[string]bool{}
	for _, w := range words(query) {
		q[w] = true
	}
	if len(q) == 0 || len(all) == 0 {
		return nil
	}
	// BM25 (k1 1.2, b 0.75) over the lessons as documents.
	const k1, b = 1.2, 0.75
	docs := make([][]string, len(all))
	df := map[string]int{}
	total := 0
	for i, l := range all {
		docs[i] = words(l.Text + " " + l.Source)
		total += len(docs[i])
		seen := map[string]bool{}
		for _, w := range docs[i] {
			if !seen[w] {
				seen[w] = true
				df[w]++
			}
		}
	}
	avg := float64(total) / float64(len(all))
	type scored struct {
		l     Lesson
		score float64
	}
	var hits []scored
	n := float64(len(all))
	for i, d := range docs {
		tf := map[string]int{}
		for _, w := range d {
			tf[w]++
		}
		score := 0.0
		for w := range q {
			f := float64(tf[w])
			if f == 0 {
				continue
			}
			idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
			score += idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(len(d))/math.Max(avg, 1)))
		}
		if score > 0 {
			hits = append(hits, scored{all[i], score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	ranked := make([]Lesson, len(hits))
	for i, h := range hits {
		ranked[i] = h.l
	}
	return within(ranked, max, budget)
}

// within keeps the best of ranked lessons: at most max, and no more than budget bytes of text.
func within(ranked []Lesson, max, budget int) []Lesson {
	var out []Lesson
	used := 0
	for _, l := range ranked {
		if len(out) >= max || used+len(l.Text) > budget {
			break
		}
		out = append(out, l)
		used += len(l.Text)
	}
	return out
}
