package openslo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxName is the longest metadata.name OpenSLO requires implementations to
// support: an RFC 1123 label (README "Notes (General Schema)").
const maxName = 63

// hashLen is the number of hex digits of the hash suffix of a name that
// had to be truncated or that would collide ("-" and 8 digits: 32 bits of
// SHA-256 of the fusebox name).
const hashLen = 8

// rfc1123 reports whether name is an RFC 1123 label: 1 to 63 lowercase
// alphanumerics or '-', starting and ending with an alphanumeric.
func rfc1123(name string) bool {
	if name == "" || len(name) > maxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && i > 0 && i < len(name)-1:
		default:
			return false
		}
	}
	return true
}

// slug is name made an RFC 1123 label: lowercased, every character other
// than a-z, 0-9 and '-' ('_', '.', ' ', non-ASCII) turned into '-', the
// leading and trailing '-' trimmed ("slo" when nothing is left). long
// reports that it is longer than 63 characters (hashed truncates it).
func slug(name string) (s string, long bool) {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s = strings.Trim(b.String(), "-")
	if s == "" {
		s = "slo"
	}
	return s, len(s) > maxName
}

// hashed is name's slug cut to leave room for "-" and hashLen hex digits
// of SHA-256(name): unique per fusebox name (to 32 bits), 63 characters at
// most.
func hashed(name string) string {
	s, _ := slug(name)
	if n := maxName - 1 - hashLen; len(s) > n {
		s = strings.TrimRight(s[:n], "-")
	}
	sum := sha256.Sum256([]byte(name))
	return s + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// exportNames are the OpenSLO names of one kind of document, by fusebox
// name: the name itself when it is an RFC 1123 label, else its slug, or
// its hashed slug when the slug is too long or would be another name's.
func exportNames(names []string) (map[string]string, error) {
	plain := map[string]int{}
	for _, n := range names {
		s := n
		if !rfc1123(n) {
			s, _ = slug(n)
		}
		plain[s]++
	}
	out := map[string]string{}
	used := map[string]string{}
	for _, n := range names {
		o := n
		if !rfc1123(n) {
			s, long := slug(n)
			o = s
			if long || plain[s] > 1 {
				o = hashed(n)
			}
		}
		if prev, dup := used[o]; dup && prev != n {
			return nil, fmt.Errorf("openslo: %q and %q would have the same OpenSLO name %q: rename one", prev, n, o)
		}
		used[o] = n
		out[n] = o
	}
	return out, nil
}

// nameFits reports whether meta is an OpenSLO name export could have
// written for the fusebox name orig (its annotation fusebox.dev/name).
func nameFits(orig, meta string) bool {
	s, _ := slug(orig)
	return meta == orig || meta == s || meta == hashed(orig)
}

// renameDocs gives docs (as exportSLO writes them, named by their fusebox
// names) OpenSLO names, references included; an SLO whose name changed
// keeps its fusebox name in its annotation fusebox.dev/name.
func renameDocs(docs []document) error {
	byKind := map[string][]string{}
	for _, d := range docs {
		byKind[d.Kind] = append(byKind[d.Kind], d.Metadata.Name)
	}
	names := map[string]map[string]string{}
	for k, ns := range byKind {
		m, err := exportNames(ns)
		if err != nil {
			return err
		}
		names[k] = m
	}
	for i := range docs {
		d := &docs[i]
		orig := d.Metadata.Name
		d.Metadata.Name = names[d.Kind][orig]
		if d.Kind == "SLO" && d.Metadata.Name != orig {
			d.Metadata.Annotations[Prefix+annName] = orig
		}
		switch s := d.Spec.(type) {
		case sloSpec:
			s.IndicatorRef = names["SLI"][s.IndicatorRef]
			for j := range s.AlertPolicies {
				s.AlertPolicies[j].AlertPolicyRef = names["AlertPolicy"][s.AlertPolicies[j].AlertPolicyRef]
			}
			d.Spec = s
		case alertPolicySpec:
			for j := range s.Conditions {
				s.Conditions[j].ConditionRef = names["AlertCondition"][s.Conditions[j].ConditionRef]
			}
			d.Spec = s
		}
	}
	return nil
}
