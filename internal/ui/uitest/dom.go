// Package uitest reads the DOM Chromium dumps (--dump-dom) of the live
// page, for tests: the elements of a tag with their attributes and the
// text up to their first child. It is for tests only.
package uitest

import (
	"html"
	"regexp"
	"strings"
)

// Element is one start tag of the DOM.
type Element struct {
	Attrs map[string]string
	// Text is the element's text up to its first child tag (all of it for
	// a leaf such as <text> or <p>), unescaped.
	Text string
}

// Has reports whether the element's class attribute holds class.
func (e Element) Has(class string) bool {
	for _, c := range strings.Fields(e.Attrs["class"]) {
		if c == class {
			return true
		}
	}
	return false
}

var attrRE = regexp.MustCompile(`([a-zA-Z_:][-a-zA-Z0-9_:.]*)="([^"]*)"`)

// Elements returns the elements of tag in document order whose attributes
// include every name=value of match ("" matches any value; "class" matches
// one class among the element's).
func Elements(dom, tag string, match map[string]string) []Element {
	re := regexp.MustCompile(`<` + regexp.QuoteMeta(tag) + `(\s[^>]*)?>([^<]*)`)
	var out []Element
	for _, m := range re.FindAllStringSubmatch(dom, -1) {
		e := Element{Attrs: map[string]string{}, Text: html.UnescapeString(m[2])}
		for _, a := range attrRE.FindAllStringSubmatch(m[1], -1) {
			e.Attrs[a[1]] = html.UnescapeString(a[2])
		}
		if matches(e, match) {
			out = append(out, e)
		}
	}
	return out
}

func matches(e Element, match map[string]string) bool {
	for k, v := range match {
		got, ok := e.Attrs[k]
		switch {
		case !ok:
			return false
		case k == "class":
			if !e.Has(v) {
				return false
			}
		case v != "" && got != v:
			return false
		}
	}
	return true
}

// Section returns the part of dom inside the element with id (up to the
// next element with an id of the same tag, or the end): the charts of one
// section of the page.
func Section(dom, tag, id string) string {
	start := strings.Index(dom, `<`+tag+` id="`+id+`"`)
	if start < 0 {
		return ""
	}
	rest := dom[start+1:]
	if end := strings.Index(rest, `<`+tag+` id="`); end >= 0 {
		return rest[:end]
	}
	return rest
}
