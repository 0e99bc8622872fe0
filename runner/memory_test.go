package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/akira-bot/akira/runner/agent/llm"
	"github.com/akira-bot/akira/runner/agent/llm/llmtest"
	"github.com/akira-bot/akira/runner/lessons"
)

// learningAgent passes a "flaky" task only when its prompt holds the magic word; it keeps every
// prompt in $LOG.
const learningAgent = logCall + `cp "$AKIRA_PROMPT_FILE" "$LOG/prompt-$AKIRA_TASK_ID-$AKIRA_ATTEMPT"
case "$AKIRA_TASK_TITLE" in
*flaky*) grep -q MAGIC-WORD "$AKIRA_PROMPT_FILE" || exit 3 ;;
esac
echo done > "$AKIRA_TASK_ID.txt"`

// TestLessonCarriedIntoLaterRun: the guidance a person gave to a retry that then succeeded is kept,
// and a later run's related task gets it in its prompt (and passes at once), an unrelated one not.
func TestLessonCarriedIntoLaterRun(t *testing.T) {
	store := &lessons.FileStore{Path: filepath.Join(t.TempDir(), "lessons.json")}
	f1 := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 Add a flaky parser\n"})
	retry := func(context.Context, Escalation) (Decision, error) {
		return Decision{Kind: DecisionRetry, Guidance: "the flaky parser tests pass only with the MAGIC-WORD seed"}, nil
	}
	out, _, err := f1.run(t, Options{Limits: Limits{MaxAttempts: 1}, Hooks: Hooks{Escalate: retry}, Agent: f1.agent(learningAgent), Lessons: store})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run 1: %v (%s)", err, out.Status)
	}
	ls, _ := store.List(context.Background())
	if len(ls) != 1 || !strings.Contains(ls[0].Text, "MAGIC-WORD") || !strings.Contains(ls[0].Source, "T1 Add a flaky parser") || ls[0].Run != out.RunID {
		t.Fatalf("lessons after run 1: %+v", ls)
	}

	f2 := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 Add another flaky parser\n- [ ] T2 Write the release notes\n"})
	noHuman := func(context.Context, Escalation) (Decision, error) { return Decision{Kind: DecisionPark}, nil }
	out, rec, err := f2.run(t, Options{Limits: Limits{MaxAttempts: 1}, Hooks: Hooks{Escalate: noHuman}, Agent: f2.agent(learningAgent), Lessons: store})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run 2: %v (%s); the lesson did not make the related task pass", err, out.Status)
	}
	wantCalls(t, f2, "T1:1", "T2:1")
	p2, err := os.ReadFile(filepath.Join(f2.logs, "prompt-T2-1"))
	if err != nil || strings.Contains(string(p2), "MAGIC-WORD") {
		t.Errorf("the unrelated task's prompt got the lesson (%v)", err)
	}
	if st := rec.of(EventAttemptStarted, "T1"); len(st) != 1 || len(st[0].Lessons) != 1 || !strings.HasPrefix(st[0].Lessons[0], ls[0].ID+": ") {
		t.Errorf("T1's attempt does not name the lesson it was given: %+v", st)
	}
}

// TestLessonFromAFixedFailure: a task whose verification failed and whose next attempt passed
// leaves a lesson recorded by Akira naming the failing command and the files that made it pass, and
// nothing of the command's output; a task that passed at once leaves none.
func TestLessonFromAFixedFailure(t *testing.T) {
	store := &lessons.FileStore{Path: filepath.Join(t.TempDir(), "lessons.json")}
	plan := "- [ ] T1 Add the config parser\n  - verify: `grep -q good parser.txt || { echo \"FAIL: $(cat parser.txt) is not the marker\"; exit 1; }`\n- [ ] T2 Write docs\n"
	f := newFixture(t, map[string]string{"ROADMAP.md": plan})
	agent := f.agent(logCall + `if [ "$AKIRA_TASK_ID" = T1 ] && [ "$AKIRA_ATTEMPT" = 1 ]; then echo bad > parser.txt; else echo good > parser.txt; fi`)
	out, _, err := f.run(t, Options{Agent: agent, Lessons: store})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run: %v (%s)", err, out.Status)
	}
	ls, _ := store.List(context.Background())
	if len(ls) != 1 {
		t.Fatalf("lessons = %+v; want one, from T1's fixed failure", ls)
	}
	l := ls[0]
	if !l.Recorded() || !strings.HasPrefix(l.Command, "grep -q good parser.txt") || len(l.Files) != 1 || l.Files[0] != "parser.txt" {
		t.Errorf("lesson = %+v; want the command and parser.txt, recorded by Akira", l)
	}
	if !strings.Contains(l.Text, "a change to parser.txt made it pass") || strings.Contains(l.Text, "bad is not the marker") {
		t.Errorf("lesson text %q: want the command and the file, none of the output", l.Text)
	}
	if !strings.Contains(l.Source, "T1 Add the config parser") {
		t.Errorf("lesson source = %q", l.Source)
	}
}

// conceptEmbedding stands in for a model that knows lexing and tokenizing are one concept: a
// lesson can be relevant to a task it shares no word with, which keywords cannot find.
func conceptEmbedding(s string) []float64 {
	concepts := [][]string{{"tokenizer", "lexer", "lexing", "tokens", "scanner"}, {"release", "changelog", "notes"}, {"database", "migration", "schema"}}
	v := make([]float64, len(concepts)+1)
	v[len(concepts)] = 0.05 // every text is a little alike
	low := strings.ToLower(s)
	for i, words := range concepts {
		for _, w := range words {
			if strings.Contains(low, w) {
				v[i]++
			}
		}
	}
	return v
}

// TestLessonsByEmbedding: with an embeddings endpoint, a lesson reaches a related task that shares
// no word with it and not an unrelated one; a failing endpoint falls back to keywords.
func TestLessonsByEmbedding(t *testing.T) {
	store := &lessons.FileStore{Path: filepath.Join(t.TempDir(), "lessons.json")}
	if _, err := store.Add(context.Background(), lessons.Lesson{Text: "the tokenizer golden files need MAGIC-WORD regenerated", Source: "note"}); err != nil {
		t.Fatal(err)
	}
	emb := llmtest.NewEmbeddings(t, "embed-small", "emb-key", conceptEmbedding)
	e, err := llm.NewEmbedder(llm.EmbeddingsConfig{Model: "embed-small", BaseURL: emb.BaseURL(), APIKey: "emb-key"})
	if err != nil {
		t.Fatal(err)
	}
	plan := "- [ ] T1 Fix a flaky lexer edge case\n- [ ] T2 Write the release notes\n"
	if got := lessons.Rank(mustList(t, store), "Fix a flaky lexer edge case", 5, 4000); len(got) != 0 {
		t.Fatalf("keywords already find the lesson (%v): the test shows nothing", got)
	}
	f := newFixture(t, map[string]string{"ROADMAP.md": plan})
	out, rec, err := f.run(t, Options{Limits: Limits{MaxAttempts: 1}, Agent: f.agent(learningAgent), Lessons: store, Semantic: &lessons.Semantic{Embedder: e}})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run: %v (%s); the lesson found by embedding did not reach the related task", err, out.Status)
	}
	if st := rec.of(EventAttemptStarted, "T2"); len(st) != 1 || len(st[0].Lessons) != 0 {
		t.Errorf("the unrelated task was given lessons: %+v", st)
	}
	// The lesson was embedded once for both tasks; each task's query once.
	if in := emb.Inputs(); len(in) != 3 {
		t.Errorf("embedded %d texts, want 3 (the lesson once, two queries): %q", len(in), in)
	}

	// An endpoint that refuses the key: the run goes on with keywords (which find nothing here).
	bad, err := llm.NewEmbedder(llm.EmbeddingsConfig{Model: "embed-small", BaseURL: emb.BaseURL(), APIKey: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	f2 := newFixture(t, map[string]string{"ROADMAP.md": "- [ ] T1 Fix the MAGIC-WORD tokenizer golden files\n"})
	out, _, err = f2.run(t, Options{Limits: Limits{MaxAttempts: 1}, Agent: f2.agent(learningAgent), Lessons: store, Semantic: &lessons.Semantic{Embedder: bad}})
	if err != nil || out.Status != StatusSucceeded {
		t.Fatalf("run with a failing endpoint: %v (%s)", err, out.Status)
	}
	if p, _ := os.ReadFile(filepath.Join(f2.logs, "prompt-T1-1")); !strings.Contains(string(p), "golden files need MAGIC-WORD") {
		t.Error("with the endpoint failing, the keyword ranking did not give the lesson")
	}
}

func mustList(t *testing.T, s lessons.Store) []lessons.Lesson {
	t.Helper()
	all, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return all
}
