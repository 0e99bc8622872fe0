package mdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// The project's documentation: the README and every page under docs/. Links between them (and to
// the repository's files) are checked here, so that a page moved or a heading renamed fails a test
// instead of leaving a newcomer at a dead link.
const repoRoot = "../.."

var (
	// inlineLink is [text](target) and ![alt](target); the target ends at the first space (a title
	// may follow) or the closing parenthesis.
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// refLink is a reference definition: [label]: target
	refLink   = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s+(\S+)`)
	heading   = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	codeSpan  = regexp.MustCompile("`[^`\n]*`")
	htmlAnchr = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
)

// slug is GitHub's anchor for a heading: lowercased, inline code marks and punctuation other than
// hyphens and underscores dropped, spaces made hyphens.
func slug(text string) string {
	text = strings.ReplaceAll(text, "`", "")
	// Links in a heading keep their text only.
	text = inlineLink.ReplaceAllStringFunc(text, func(s string) string {
		return s[strings.Index(s, "[")+1 : strings.Index(s, "]")]
	})
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors lists the anchors a markdown page has: its headings' slugs, numbered as GitHub numbers
// repeated ones, and explicit <a name> / <a id> anchors. Headings inside fenced blocks are code.
func anchors(md string) map[string]bool {
	outside, _ := Split(md)
	seen := map[string]int{}
	out := map[string]bool{}
	for _, line := range strings.Split(outside, "\n") {
		if m := heading.FindStringSubmatch(line); m != nil {
			s := slug(m[1])
			if n := seen[s]; n > 0 {
				out[fmt.Sprintf("%s-%d", s, n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
	}
	for _, m := range htmlAnchr.FindAllStringSubmatch(outside, -1) {
		out[m[1]] = true
	}
	return out
}

// links lists the local link targets of a page, outside fenced blocks and code spans.
func links(md string) []string {
	outside, _ := Split(md)
	// What a code span holds is blanked, not removed, so that a link whose text is code still
	// reads as a link; spans stay within their line.
	outside = codeSpan.ReplaceAllStringFunc(outside, func(s string) string {
		return "`" + strings.Repeat("x", len(s)-2) + "`"
	})
	var out []string
	for _, re := range []*regexp.Regexp{inlineLink, refLink} {
		for _, m := range re.FindAllStringSubmatch(outside, -1) {
			target := strings.Trim(m[1], "<>")
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue // not checked: the tests run without a network
			}
			out = append(out, target)
		}
	}
	return out
}

// docPages is the README and docs/*.md, as paths relative to the repository's root.
func docPages(t *testing.T) []string {
	t.Helper()
	pages := []string{"README.md"}
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(repoRoot, d)
		pages = append(pages, filepath.ToSlash(rel))
	}
	return pages
}

// TestDocumentationLinks: every local link of the README and of docs/ names a file of the
// repository and, when it has one, an anchor that page has.
func TestDocumentationLinks(t *testing.T) {
	pages := docPages(t)
	anchorsOf := map[string]map[string]bool{}
	read := func(page string) (string, error) {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		return string(data), err
	}
	checked := 0
	for _, page := range pages {
		md, err := read(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(md) {
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				if strings.HasPrefix(dest, "../") {
					t.Errorf("%s: link %q leaves the repository", page, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(dest))); err != nil {
					t.Errorf("%s: link %q names %s, which the repository does not have", page, target, dest)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") {
				continue // a line anchor into a source file (#L10) is GitHub's, not the file's
			}
			if anchorsOf[dest] == nil {
				md, err := read(dest)
				if err != nil {
					t.Fatal(err)
				}
				anchorsOf[dest] = anchors(md)
			}
			if !anchorsOf[dest][anchor] {
				t.Errorf("%s: link %q: %s has no heading with the anchor #%s", page, target, dest, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no local link found in the README and docs/: the link reader is broken")
	}
}

// TestDocsReachableFromTheREADME: every page of docs/ is linked from the README or from a page
// the README links, so that none is written and then lost.
func TestDocsReachableFromTheREADME(t *testing.T) {
	pages := docPages(t)
	reached := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		page := queue[0]
		queue = queue[1:]
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(page)))
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range links(string(data)) {
			file, _, _ := strings.Cut(target, "#")
			if !strings.HasSuffix(file, ".md") {
				continue
			}
			dest := filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
			if slices.Contains(pages, dest) && !reached[dest] {
				reached[dest] = true
				queue = append(queue, dest)
			}
		}
	}
	for _, page := range pages {
		if !reached[page] {
			t.Errorf("%s is not linked from the README (nor from a page it links)", page)
		}
	}
}

func TestSlug(t *testing.T) {
	for _, tt := range []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"`akira run` on your own repository", "akira-run-on-your-own-repository"},
		{"Coding-agent CLIs (`--agent-cmd`, profiles of `kind: exec`)", "coding-agent-clis---agent-cmd-profiles-of-kind-exec"},
		{"Repository configuration: `.github/akira.yml`", "repository-configuration-githubakirayml"},
		{"A run's life: `jobs/lifecycle`", "a-runs-life-jobslifecycle"},
		{"📝 Akira's plan for this issue", "-akiras-plan-for-this-issue"},
		{"When the base moves, forks, signed commits", "when-the-base-moves-forks-signed-commits"},
	} {
		if got := slug(tt.heading); got != tt.want {
			t.Errorf("slug(%q) = %q, want %q", tt.heading, got, tt.want)
		}
	}
}

func TestLinksAndAnchorsRead(t *testing.T) {
	md := "# Title\n\n## Title\n\nSee [a](#title-1), [b](docs/x.md#y) and `[c](#not-a-link)`.\n\n```\n# not a heading\n[d](#nor-this)\n```\n\n[ref]: other.md\n"
	if got := links(md); !slices.Equal(got, []string{"#title-1", "docs/x.md#y", "other.md"}) {
		t.Errorf("links = %q", got)
	}
	a := anchors(md)
	if !a["title"] || !a["title-1"] || a["not-a-heading"] || len(a) != 2 {
		t.Errorf("anchors = %v", a)
	}
}
