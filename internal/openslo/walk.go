package openslo

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// doc is one YAML document being imported: where it is, and every mapping
// of it that import looked at, so that the keys it did not read are named
// (finish) instead of dropped.
type doc struct {
	file     string
	index    int // 1-based
	kind     string
	name     string
	version  string
	root     *obj
	md       *obj // root's metadata
	objs     []*obj
	problems *Problems
	used     bool  // referenced by an SLO (SLI, AlertPolicy, AlertCondition)
	target   *bool // an AlertNotificationTarget: is it fusebox (isFuseboxTarget)
}

// obj is one mapping of a document and the keys read of it.
type obj struct {
	n    *yaml.Node
	path string
	read map[string]bool
	d    *doc
}

func (d *doc) obj(n *yaml.Node, path string) *obj {
	o := &obj{n: n, path: path, read: map[string]bool{}, d: d}
	d.objs = append(d.objs, o)
	return o
}

func (d *doc) add(line int, field, reason string, ignored bool) {
	*d.problems = append(*d.problems, &Problem{File: d.file, Document: d.index, Kind: d.kind, Name: d.name, Line: line, Field: field, Reason: reason, Ignored: ignored})
}

// refuse reports a field import cannot map.
func (d *doc) refuse(line int, field, reason string) { d.add(line, field, reason, false) }

// note reports a field import leaves out because it does not change what
// fusebox checks.
func (d *doc) note(line int, field, reason string) { d.add(line, field, reason, true) }

// finish refuses every key of the document's mappings that import did not
// read.
func (d *doc) finish() {
	for _, o := range d.objs {
		for i := 0; i+1 < len(o.n.Content); i += 2 {
			k := o.n.Content[i]
			if !o.read[k.Value] {
				d.refuse(k.Line, join(o.path, k.Value), "not mapped: fusebox has no counterpart for this field")
			}
		}
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	if strings.ContainsAny(k, "./") {
		return path + "[" + strconv.Quote(k) + "]"
	}
	return path + "." + k
}

// key returns the key node and the value of key, and marks it read; nil
// when absent.
func (o *obj) key(key string) (*yaml.Node, *yaml.Node) {
	if o == nil || o.n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(o.n.Content); i += 2 {
		if o.n.Content[i].Value == key {
			o.read[key] = true
			v := o.n.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return o.n.Content[i], v
		}
	}
	return nil, nil
}

func (o *obj) has(key string) bool {
	if o == nil {
		return false
	}
	for i := 0; i+1 < len(o.n.Content); i += 2 {
		if o.n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// line is the line of key, else of the mapping.
func (o *obj) line(key string) int {
	if o == nil {
		return 0
	}
	for i := 0; i+1 < len(o.n.Content); i += 2 {
		if o.n.Content[i].Value == key {
			return o.n.Content[i].Line
		}
	}
	return o.n.Line
}

// child returns the mapping under key, nil when absent (or refused: not a
// mapping).
func (o *obj) child(key string) *obj {
	k, v := o.key(key)
	if v == nil || v.Tag == "!!null" {
		return nil
	}
	if v.Kind != yaml.MappingNode {
		o.d.refuse(k.Line, join(o.path, key), "want a mapping")
		return nil
	}
	return o.d.obj(v, join(o.path, key))
}

// str returns the scalar under key; ok is false when absent or refused.
func (o *obj) str(key string) (string, bool) {
	k, v := o.key(key)
	if v == nil || v.Tag == "!!null" {
		return "", false
	}
	if v.Kind != yaml.ScalarNode {
		o.d.refuse(k.Line, join(o.path, key), "want a string")
		return "", false
	}
	return v.Value, true
}

// num returns the number under key; ok is false when absent or refused.
func (o *obj) num(key string) (float64, bool) {
	k, v := o.key(key)
	if v == nil || v.Tag == "!!null" {
		return 0, false
	}
	f, err := strconv.ParseFloat(v.Value, 64)
	if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") || err != nil {
		o.d.refuse(k.Line, join(o.path, key), "want a number, got "+strconv.Quote(v.Value))
		return 0, false
	}
	return f, true
}

// boolean returns the boolean under key; ok is false when absent or
// refused.
func (o *obj) boolean(key string) (bool, bool) {
	k, v := o.key(key)
	if v == nil || v.Tag == "!!null" {
		return false, false
	}
	if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" {
		o.d.refuse(k.Line, join(o.path, key), "want true or false, got "+strconv.Quote(v.Value))
		return false, false
	}
	return v.Value == "true", true
}

// list returns the items under key (nil when absent or refused) and the
// path of item i.
func (o *obj) list(key string) ([]*yaml.Node, func(i int) string) {
	k, v := o.key(key)
	p := join(o.path, key)
	at := func(i int) string { return p + "[" + strconv.Itoa(i) + "]" }
	if v == nil || v.Tag == "!!null" {
		return nil, at
	}
	if v.Kind != yaml.SequenceNode {
		o.d.refuse(k.Line, p, "want a list")
		return nil, at
	}
	return v.Content, at
}

// item returns list item n at path as a mapping, nil (refused) otherwise.
func (d *doc) item(n *yaml.Node, path string) *obj {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n.Kind != yaml.MappingNode {
		d.refuse(n.Line, path, "want a mapping")
		return nil
	}
	return d.obj(n, path)
}

// ignore marks key read and notes it when present.
func (o *obj) ignore(key, reason string) {
	if k, _ := o.key(key); k != nil {
		o.d.note(k.Line, join(o.path, key), reason)
	}
}

// skip marks key read without a note (fields import reads elsewhere, or
// that are fusebox's own).
func (o *obj) skip(keys ...string) {
	for _, k := range keys {
		o.key(k)
	}
}

// skipAll marks every key under o read (a mapping refused as a whole).
func (o *obj) skipAll() {
	if o == nil {
		return
	}
	for i := 0; i+1 < len(o.n.Content); i += 2 {
		o.read[o.n.Content[i].Value] = true
	}
}
