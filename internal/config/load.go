package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/effect"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/schemas"
	"go.yaml.in/yaml/v3"
)

// Error is one problem with the file, located.
type Error struct {
	File   string
	Line   int    // 0 when the field is absent from the file (a default)
	Field  string // path such as "slos[1].tail.p"
	Reason string
}

func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	return loc + ": " + e.Field + ": " + e.Reason
}

// Load reads, decodes and validates the SLO file at path, for the kinds
// fusebox ships (registry.Default()). The error, when not nil, joins one
// *Error per problem, in line order: unknown keys, type errors and
// semantic errors all at once (a misspelt key does not hide an invalid
// value elsewhere).
func Load(path string) (*File, error) { return LoadWith(path) }

// LoadWith is Load with overrides (command-line flags, environment
// variables) applied after the file is decoded and before it is validated,
// in order.
func LoadWith(path string, overrides ...Override) (*File, error) {
	return Loader{}.Load(path, overrides...)
}

// Loader loads SLO files whose processor sections are of the kinds of
// Kinds. The zero Loader loads for registry.Default(), the kinds fusebox
// ships, as Load does; a test adds its own kind with
// Loader{Kinds: registry.With(k)}.
type Loader struct {
	Kinds registry.List
}

func (l Loader) kinds() registry.List {
	if l.Kinds.Len() == 0 {
		return registry.Default()
	}
	return l.Kinds
}

// Load is LoadWith for the loader's kinds.
func (l Loader) Load(path string, overrides ...Override) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return l.Parse(path, b, overrides...)
}

// Override replaces a field's value from outside the file. An error in
// the value it sets is reported with Source in place of the file's name
// and no line ("--brokers: kafka.brokers[0]: want host:port ...").
type Override struct {
	Field  string      // the field's path, as in errors: "kafka.brokers"
	Source string      // where the value comes from: "--brokers", "$FUSEBOX_BROKERS"
	Apply  func(*File) // sets the value
}

// Parse is Load on bytes; name is used in error messages.
func Parse(name string, b []byte) (*File, error) { return ParseWith(name, b) }

// ParseWith is LoadWith on bytes.
func ParseWith(name string, b []byte, overrides ...Override) (*File, error) {
	return Loader{}.Parse(name, b, overrides...)
}

// Parse is ParseWith for the loader's kinds.
func (l Loader) Parse(name string, b []byte, overrides ...Override) (*File, error) {
	kinds := l.kinds()
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, &Error{File: name, Line: yamlErrorLine(err), Field: "(file)", Reason: err.Error()}
	}
	f := Default()
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Field: "(file)", Reason: "empty file"}
	}
	lines := map[string]int{}
	var errs []*Error
	checkKnown(root.Content[0], reflect.TypeOf(f), "", lines, kinds, func(line int, field, reason string) {
		errs = append(errs, &Error{File: name, Line: line, Field: field, Reason: reason})
	})
	// Decode and validate even after unknown keys: they are ignored by the
	// decoder, and the semantic errors of the rest are reported with them.
	// A value of the wrong type keeps its default and is reported per line.
	typeErrs := func(err error) *Error {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return &Error{File: name, Line: yamlErrorLine(err), Field: "(file)", Reason: err.Error()}
		}
		for _, m := range te.Errors {
			errs = append(errs, &Error{File: name, Line: yamlErrorLine(errors.New(m)), Field: "(value)", Reason: m})
		}
		return nil
	}
	if err := root.Content[0].Decode(&f); err != nil {
		if e := typeErrs(err); e != nil {
			return nil, e
		}
	}
	if err := f.decodeSections(kinds); err != nil {
		if e := typeErrs(err); e != nil {
			return nil, e
		}
	}
	for _, o := range overrides {
		o.Apply(&f)
	}
	if f.Version == "" {
		f.Version = f.semanticVersion()
	}
	f.deriveTopics(lines)
	_, explicitRules := lines["breaker.rules"]
	for _, e := range append(f.validate(kinds), f.validateRules(kinds, explicitRules)...) {
		err := &Error{File: name, Line: lineOf(lines, e.Field), Field: e.Field, Reason: e.Reason}
		for _, o := range overrides {
			if e.Field == o.Field || strings.HasPrefix(e.Field, o.Field+"[") || strings.HasPrefix(e.Field, o.Field+".") {
				err.File, err.Line = o.Source, 0
			}
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return &f, nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	return nil, errors.Join(out...)
}

// semanticVersion hashes what decides the verdicts — key dimensions and
// limits, attribute names, decode limits, the allowed lateness, the SLOs,
// the rollups, the breaker and the effect and answers sections (when not
// the default)
// — and nothing else: moving a broker, renaming
// the consumer group or editing a comment must not change every verdict id
// (which would duplicate every row in ClickHouse) nor drop the processors'
// state at the next restart.
func (f *File) semanticVersion() string {
	sem := struct {
		Keys       Keys
		Attributes any
		Limits     any
		Lateness   time.Duration
		SLOs       []SLO
		Rollups    Rollups
		Breaker    Breaker
		// Only when set, so that the versions of files without rules stay.
		Evaluations *schemas.EvaluationMapping `json:",omitempty"`
		// Only when not the default, so that the versions of files
		// written before the effect section stay.
		Effect *Effect `json:",omitempty"`
		// Only when not the default, as the effect section (the answers
		// section decides rollup counts and, with bad_events, verdicts).
		Answers *schemas.Answers `json:",omitempty"`
	}{f.Keys, f.Attributes, f.Limits, f.Time.AllowedLateness, f.SLOs, f.Rollups, f.Breaker, nil, nil, nil}
	if !f.Answers.IsDefault() {
		a := f.Answers.Normalized()
		sem.Answers = &a
	}
	if f.Evaluations.Enabled() {
		sem.Evaluations = &f.Evaluations
	}
	if f.Effect != effect.DefaultConfig() {
		sem.Effect = &f.Effect
	}
	b, err := json.Marshal(sem)
	if err != nil {
		panic("config: version hash: " + err.Error()) // plain data: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// deriveTopics names the deployment's internal topics after its group
// when the file does not name them: two deployments with different groups
// on one cluster then never share a keyed or a state topic. The default
// group "fusebox" gives the names of earlier versions (fusebox.keyed,
// fusebox.state).
func (f *File) deriveTopics(lines map[string]int) {
	if _, set := lines["topics.keyed"]; !set {
		f.Topics.Keyed = f.Kafka.Group + ".keyed"
	}
	if _, set := lines["topics.state"]; !set {
		f.Topics.State = f.Kafka.Group + ".state"
	}
	if _, set := lines["topics.summaries"]; !set {
		f.Topics.Summaries = f.Kafka.Group + ".summaries"
	}
}

// Deployment is the identity of this deployment in its keyed records and
// checkpoints: its consumer group prefix. A deployment drops (and counts)
// keyed records and checkpoints of another.
func (f *File) Deployment() string { return f.Kafka.Group }

// lineOf finds the line of field, or of its nearest parent in the file.
func lineOf(lines map[string]int, field string) int {
	for p := field; p != ""; {
		if l, ok := lines[p]; ok {
			return l
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

func yamlErrorLine(err error) int {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	if i := strings.Index(msg, "line "); i >= 0 {
		n := 0
		for _, c := range msg[i+5:] {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	return 0
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	sloType      = reflect.TypeOf(SLO{})
)

// checkKnown walks the YAML tree alongside the Go type, recording each
// field's line and reporting keys the type does not have: a misspelt
// option must be an error, not a silently ignored default.
func checkKnown(n *yaml.Node, t reflect.Type, path string, lines map[string]int, kinds registry.List, report func(int, string, string)) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if path != "" {
		lines[path] = n.Line
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode {
			report(n.Line, path, "want a duration such as 90s or 5m")
			return
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			report(n.Line, path, "not a duration ("+err.Error()+"); write e.g. 90s, 5m, 1h")
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return
			}
			report(n.Line, path, "want a mapping")
			return
		}
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag != "" && tag != "-" {
				fields[tag] = t.Field(i).Type
			}
		}
		if t == sloType {
			for _, k := range kinds.Kinds() {
				fields[k.Name] = reflect.TypeOf(k.Default())
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			ft, ok := fields[k.Value]
			p := join(path, k.Value)
			if !ok {
				report(k.Line, p, "unknown field"+suggest(k.Value, fields))
				continue
			}
			checkKnown(v, ft, p, lines, kinds, report)
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
		if n.Kind != yaml.SequenceNode {
			if n.Tag == "!!null" {
				return
			}
			report(n.Line, path, "want a list")
			return
		}
		for i, c := range n.Content {
			checkKnown(c, t.Elem(), path+"["+strconv.Itoa(i)+"]", lines, kinds, report)
		}
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// suggest names a known field one edit away, for typos.
func suggest(k string, fields map[string]reflect.Type) string {
	var names []string
	for f := range fields {
		if closeTo(k, f) {
			names = append(names, f)
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return " (did you mean " + strings.Join(names, " or ") + "?)"
}

// closeTo reports an edit distance of at most 2.
func closeTo(a, b string) bool {
	if d := len(a) - len(b); d > 2 || d < -2 {
		return false
	}
	return EditDistance(a, b) <= 2
}

// EditDistance is the Levenshtein distance of a and b, in bytes: the
// fewest single-byte insertions, deletions and substitutions that turn a
// into b. The "did you mean" of config keys and of the CLI's flags and
// commands.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// UnmarshalYAML decodes an SLO entry's name and match, and keeps its node
// for its processor sections, which the Loader decodes (decodeSections)
// for its kinds.
func (s *SLO) UnmarshalYAML(n *yaml.Node) error {
	var raw struct {
		Name  string        `yaml:"name"`
		Match schemas.Match `yaml:"match"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*s = SLO{Name: raw.Name, Match: raw.Match, node: n}
	return nil
}

// decodeSections decodes every SLO entry's processor sections, one per
// kind of kinds whose name is a key of the entry, each over the kind's
// defaults. An entry with a section of the wrong type is dropped, as the
// decoder drops any entry it cannot decode; the error joins the type
// errors (a *yaml.TypeError) or is the first other error.
func (f *File) decodeSections(kinds registry.List) error {
	var te yaml.TypeError
	kept := f.SLOs[:0]
	for _, s := range f.SLOs {
		n := s.node
		s.node = nil
		if n == nil { // not decoded from YAML
			kept = append(kept, s)
			continue
		}
		ok := true
		for _, k := range kinds.Kinds() {
			sec := mappingValue(n, k.Name)
			if sec == nil {
				continue
			}
			c := k.Default()
			if sec.Tag != "!!null" {
				if err := sec.Decode(c); err != nil {
					var e *yaml.TypeError
					if !errors.As(err, &e) {
						return err
					}
					te.Errors = append(te.Errors, e.Errors...)
					ok = false
					break
				}
			}
			s.Sections = append(s.Sections, Section{Kind: k, Config: c})
		}
		if ok {
			kept = append(kept, s)
		}
	}
	f.SLOs = kept
	if len(te.Errors) > 0 {
		return &te
	}
	return nil
}

// mappingValue returns the value of key in the mapping n, nil when absent.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// hashedKinds are the kinds of the former SLO struct (one pointer field
// per kind), whose members MarshalJSON writes always, null when absent.
// The list is frozen: a kind added later is written only when the entry
// has it, so that adding a kind keeps the config version (every verdict
// id) of every existing file.
var hashedKinds = []string{"tail", "drift", "decay", "scaling", "corrections", "burnrate"}

// MarshalJSON writes the entry as the configuration hash has always seen
// it: {"Name":…,"Match":…} then one member per kind of hashedKinds, named
// by the kind with a capital initial ("Tail", …), holding its section or
// null, then a member for each section of another kind. Keeping these
// bytes keeps the config version of every existing file (and so its
// verdict ids and state) across releases.
func (s SLO) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	name, err := json.Marshal(s.Name)
	if err != nil {
		return nil, err
	}
	match, err := json.Marshal(s.Match)
	if err != nil {
		return nil, err
	}
	b.WriteString(`{"Name":`)
	b.Write(name)
	b.WriteString(`,"Match":`)
	b.Write(match)
	member := func(kind string, c any) error {
		b.WriteString(`,"` + strings.ToUpper(kind[:1]) + kind[1:] + `":`)
		v, err := json.Marshal(c)
		b.Write(v)
		return err
	}
	for _, k := range hashedKinds {
		var c any
		for _, sec := range s.Sections {
			if sec.Kind.Name == k {
				c = sec.Config
			}
		}
		if err := member(k, c); err != nil {
			return nil, err
		}
	}
	for _, sec := range s.Sections {
		if !slices.Contains(hashedKinds, sec.Kind.Name) {
			if err := member(sec.Kind.Name, sec.Config); err != nil {
				return nil, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// fieldErr is a validation problem before it is located.
type fieldErr struct {
	Field  string
	Reason string
}

// collect turns errors from Validate methods (joined *processors.ConfigError
// or *schemas.FieldError) into fieldErrs under prefix.
func collect(prefix string, err error) []fieldErr {
	switch e := err.(type) {
	case nil:
		return nil
	case *processors.ConfigError:
		return []fieldErr{{join(prefix, e.Field), e.Reason}}
	case *schemas.FieldError:
		f := e.Field
		last := prefix[strings.LastIndexByte(prefix, '.')+1:]
		if last != "" && strings.HasPrefix(f, last+".") {
			f = f[len(last)+1:] // "limits.max_x" reported under prefix "limits"
		}
		return []fieldErr{{join(prefix, f), e.Reason}}
	case interface{ Unwrap() []error }:
		var out []fieldErr
		for _, x := range e.Unwrap() {
			out = append(out, collect(prefix, x)...)
		}
		return out
	}
	return []fieldErr{{prefix, err.Error()}}
}
