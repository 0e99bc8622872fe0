// Package lessons is a repository's memory: what people taught Akira in earlier runs (the guidance
// of a retry that then succeeded, notes written with /akira remember, addressed reviews) and what
// Akira recorded itself (a verification command that failed and the files whose change made it
// pass), ranked against a task so the relevant ones reach its prompt. Ranking is BM25 over words, in
// process; a store keeps the lessons of one repository only.
//
// Only people's lessons are guidance. What Akira records comes from agent work (file names, and
// before, command output), which a hostile agent writes: it keeps a command and file names, never
// output, and prompts quote it as data.
package lessons

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Origin says who a lesson comes from, which decides how a prompt shows it.
type Origin string

const (
	// OriginPerson is a lesson a person taught: /akira remember, an operator's note, the guidance of
	// a retry, an addressed review. Prompts present these as guidance to follow.
	OriginPerson Origin = "person"
	// OriginAkira is a lesson Akira recorded from its own attempts: Command and Files, no output.
	// Prompts quote these as data, never as instructions.
	OriginAkira Origin = "akira"
)

// legacyFixSource starts the Source of the automatic lessons written before lessons had an Origin:
// their Text carries two lines of the failing command's output, which agent code writes.
const legacyFixSource = "a failure fixed in "

// Caps of what an automatic lesson keeps.
const (
	MaxCommand  = 200 // runes of the command
	MaxFiles    = 8   // file names
	MaxFileName = 200 // runes of one file name
)

// Lesson is one thing learnt, with where it came from.
type Lesson struct {
	ID string `json:"id"`
	// Text is the lesson as people read it in listings, and what ranking matches against. For a
	// lesson Akira recorded it is made from Command and Files.
	Text string `json:"text"`
	// Origin is who the lesson comes from; empty in lessons kept before it existed (see Taught).
	Origin Origin `json:"origin,omitempty"`
	// Command and Files are all an automatic lesson keeps: the verification command that failed
	// and the files whose change then made it pass.
	Command string   `json:"command,omitempty"`
	Files   []string `json:"files,omitempty"`
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

// Taught reports whether people taught the lesson: only those read as rules. A lesson kept before
// lessons had an Origin was a person's unless it is one of the automatic lessons of that time,
// whose text carries command output; an origin this version does not know is nobody's.
func (l Lesson) Taught() bool {
	switch l.Origin {
	case OriginPerson:
		return true
	case "":
		return !strings.HasPrefix(l.Source, legacyFixSource)
	}
	return false
}

// Recorded reports whether Akira recorded the lesson itself, in the form that keeps no output.
func (l Lesson) Recorded() bool { return l.Origin == OriginAkira }

// Shown reports whether the lesson may reach a prompt at all: people's lessons, and Akira's own in
// the form that keeps no output. The automatic lessons of earlier versions, which quote output an
// agent may have written, never do; they stay in the store, listed, until forgotten or pushed out.
func (l Lesson) Shown() bool { return l.Taught() || l.Recorded() }

// Recording is the lesson Akira keeps when a verification command failed and a change to files
// then made it pass: the command and the file names, capped, and a text made of them.
func Recording(command string, files []string, source string) Lesson {
	command = clip(strings.Join(strings.Fields(command), " "), MaxCommand)
	var kept []string
	for _, f := range files {
		if f = clip(f, MaxFileName); f != "" && len(kept) < MaxFiles {
			kept = append(kept, f)
		}
	}
	// The text is read in terminals and check runs: a name with a line break or a control
	// character (an escape sequence) is shown quoted, as Go writes it.
	names := make([]string, len(kept))
	for i, f := range kept {
		names[i] = printable(f)
	}
	text := fmt.Sprintf("`%s` failed; a change to %s made it pass.", printable(command), strings.Join(names, ", "))
	if n := len(files) - len(kept); n > 0 {
		text = fmt.Sprintf("`%s` failed; a change to %s and %d more made it pass.", printable(command), strings.Join(names, ", "), n)
	}
	return Lesson{Origin: OriginAkira, Command: command, Files: kept, Text: text, Source: source}
}

// printable is s, or s quoted when it holds anything but printable characters and spaces.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Normalize fills in an id and a date, and caps the text (and an automatic lesson's parts).
func Normalize(l Lesson, now time.Time) Lesson {
	if l.ID == "" {
		l.ID = NewID()
	}
	if l.Created.IsZero() {
		l.Created = now.UTC()
	}
	l.Text = clip(strings.TrimSpace(l.Text), MaxText)
	if l.Recorded() {
		l.Command = clip(l.Command, MaxCommand)
		l.Files = slices.Clone(l.Files[:min(len(l.Files), MaxFiles)])
		for i, f := range l.Files {
			l.Files[i] = clip(f, MaxFileName)
		}
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
