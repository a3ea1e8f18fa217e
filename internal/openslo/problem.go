package openslo

import (
	"strconv"
	"strings"
)

// Problem is one thing of an OpenSLO file that import could not map, or
// maps with a note. It names the file, the document (1-based, in the
// file's order, with its kind and metadata.name), the line and the field
// path inside the document ("spec.budgetingMethod").
type Problem struct {
	File     string
	Document int    // 1-based index of the YAML document in File
	Kind     string // the document's kind ("SLO"), "" when unknown
	Name     string // its metadata.name, "" when missing
	Line     int    // 0 when not known
	Field    string // path inside the document
	Reason   string
	// Ignored marks a field that does not change what fusebox checks
	// (displayName, description, labels, notification targets, other
	// tools' annotations): reported as a note, the import goes on.
	// Otherwise the field is refused: the import fails unless partial
	// results are allowed.
	Ignored bool
}

// Error formats the problem as FILE:LINE: document N (KIND NAME): FIELD:
// REASON, with "note: " before the reason of an ignored field.
func (p *Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
	}
	b.WriteString(": document " + strconv.Itoa(p.Document))
	if p.Kind != "" || p.Name != "" {
		b.WriteString(" (" + strings.TrimSpace(p.Kind+" "+p.Name) + ")")
	}
	if p.Field != "" {
		b.WriteString(": " + p.Field)
	}
	b.WriteString(": ")
	if p.Ignored {
		b.WriteString("note: ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

// Problems is every problem of an import, in file, document and line
// order.
type Problems []*Problem

// Refused returns the problems that are not merely ignored fields.
func (ps Problems) Refused() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Ignored {
			out = append(out, p)
		}
	}
	return out
}

// Error joins the problems one per line.
func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}
