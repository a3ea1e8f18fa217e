package layout

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file it names exists, and its #anchor, if any, is a heading of that file
// (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens, a
// repeated heading suffixed -1, -2, ...). Links inside code are not links;
// absolute URLs are not checked (no network in tests).
func TestDocLinks(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append([]string{filepath.Join(root, "README.md")}, pages...)
	if len(pages) < 2 {
		t.Fatal("no pages under docs/")
	}
	anchors := map[string]map[string]bool{} // file → its anchors
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(b))
		anchors[path] = a
		return a
	}
	links := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, page)
		for _, l := range markdownLinks(string(b)) {
			if strings.Contains(l.target, "://") || strings.HasPrefix(l.target, "mailto:") {
				continue
			}
			links++
			file, anchor, _ := strings.Cut(l.target, "#")
			target := page
			if file != "" {
				target = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
				st, err := os.Stat(target)
				if err != nil {
					t.Errorf("%s:%d: link %q: no such file", rel, l.line, l.target)
					continue
				}
				if st.IsDir() {
					if anchor != "" {
						t.Errorf("%s:%d: link %q: an anchor in a directory", rel, l.line, l.target)
					}
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(target, ".md") {
				t.Errorf("%s:%d: link %q: an anchor in a file that is not markdown", rel, l.line, l.target)
				continue
			}
			if !anchorsOf(target)[anchor] {
				t.Errorf("%s:%d: link %q: %s has no heading with anchor #%s", rel, l.line, l.target, filepath.Base(target), anchor)
			}
		}
	}
	if links == 0 {
		t.Error("no relative link found: the test checks nothing")
	}
}

type link struct {
	target string
	line   int
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
)

// markdownLinks returns the targets of the inline links of a markdown
// text, outside fenced code blocks and code spans.
func markdownLinks(text string) []link {
	var out []link
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = inlineCodeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			out = append(out, link{target: m[1], line: i + 1})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the ATX headings of a
// markdown text.
func headingAnchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		a := slug(strings.TrimSpace(h))
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, letters, digits,
// spaces, hyphens and underscores kept, spaces turned into hyphens.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
