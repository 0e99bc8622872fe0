package admin

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// apiReference is the API page's table (docs/api.md), generated from the served description: a route,
// what it does, its body's fields and its answers.
func apiReference(doc *openapi3.T) string {
	var b strings.Builder
	b.WriteString("| Route | What | Body | Answers |\n| --- | --- | --- | --- |\n")
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, p := range paths {
		item := doc.Paths.Value(p)
		methods := []string{}
		for m := range item.Operations() {
			methods = append(methods, m)
		}
		slices.Sort(methods)
		for _, m := range methods {
			op := item.GetOperation(m)
			body := ""
			if rb := op.RequestBody; rb != nil && rb.Value != nil {
				if mt := rb.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Value != nil {
					var fields []string
					for name := range mt.Schema.Value.Properties {
						fields = append(fields, name)
					}
					slices.Sort(fields)
					body = "`" + strings.Join(fields, "`, `") + "`"
				}
			}
			var answers []string
			for code, r := range op.Responses.Map() {
				a := code
				if r.Value != nil && code[0] == '2' {
					if mt := r.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil && mt.Schema.Ref != "" {
						a += " `" + filepath.Base(mt.Schema.Ref) + "`"
					} else if r.Value.Content.Get("text/plain") != nil {
						a += " text"
					}
				}
				answers = append(answers, a)
			}
			slices.Sort(answers)
			what := strings.ReplaceAll(op.Summary, "|", "\\|")
			b.WriteString("| `" + m + " " + p + "` | " + what + " | " + body + " | " + strings.Join(answers, ", ") + " |\n")
		}
	}
	return b.String()
}

const (
	apiBegin = "<!-- api:begin (generated from app/admin/openapi.json: AKIRA_UPDATE_README=1 go test ./app/admin -run TestAPIReferenceInDocs) -->"
	apiEnd   = "<!-- api:end -->"
)

// TestAPIReferenceInDocs: the API reference of docs/api.md is the one generated from the description.
func TestAPIReferenceInDocs(t *testing.T) {
	doc, _ := loadSpec(t)
	path := filepath.Join("..", "..", "docs", "api.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	want := apiBegin + "\n" + apiReference(doc) + apiEnd
	start, end := strings.Index(readme, "<!-- api:begin"), strings.Index(readme, apiEnd)
	if start < 0 || end < start {
		t.Fatal("docs/api.md has no API reference section (<!-- api:begin … --> … <!-- api:end -->)")
	}
	if got := readme[start : end+len(apiEnd)]; got == want {
		return
	} else if os.Getenv("AKIRA_UPDATE_README") != "1" {
		t.Fatalf("the API reference of docs/api.md differs from openapi.json; regenerate it with AKIRA_UPDATE_README=1 go test ./app/admin -run TestAPIReferenceInDocs\n--- got\n%s\n--- want\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte(readme[:start]+want+readme[end+len(apiEnd):]), 0o644); err != nil {
		t.Fatal(err)
	}
}
