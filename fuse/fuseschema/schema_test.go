package fuseschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"testing"
	"unicode/utf8"
)

// loadSchema reads fuse_command.v1.schema.json with numbers kept exact.
func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("fuse_command.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&s); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	return s
}

// objectKeys returns the member names of the object at path (a list of
// member names from the root) in file order.
func objectKeys(t *testing.T, path ...string) []string {
	t.Helper()
	b, err := os.ReadFile("fuse_command.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	var walk func(depth int) []string
	// skip consumes one value.
	var skip func()
	skip = func() {
		tok, _ := d.Token()
		if delim, ok := tok.(json.Delim); ok && (delim == '{' || delim == '[') {
			for d.More() {
				if delim == '{' {
					d.Token()
				}
				skip()
			}
			d.Token()
		}
	}
	walk = func(depth int) []string {
		d.Token() // '{'
		var keys []string
		var found []string
		for d.More() {
			tok, _ := d.Token()
			k := tok.(string)
			keys = append(keys, k)
			if depth < len(path) && k == path[depth] {
				found = walk(depth + 1)
				continue
			}
			skip()
		}
		d.Token() // '}'
		if depth == len(path) {
			return keys
		}
		return found
	}
	return walk(0)
}

func strs(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func TestFuseCommandSchemaAgreesWithCode(t *testing.T) {
	s := loadSchema(t)
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Fatalf("$schema %v, want draft 2020-12", s["$schema"])
	}
	if got := objectKeys(t, "properties"); !reflect.DeepEqual(got, FuseCommandFields) {
		t.Fatalf("schema properties in order %q, want the canonical order %q", got, FuseCommandFields)
	}
	if got := strs(s["required"]); !reflect.DeepEqual(got, FuseCommandFields) {
		t.Fatalf("required %q, want every member %q", got, FuseCommandFields)
	}
	if s["additionalProperties"] != false {
		t.Fatalf("additionalProperties must be false (unknown members are rejected)")
	}
	props := s["properties"].(map[string]any)
	if c := props["schema"].(map[string]any)["const"]; c != FuseCommandSchema {
		t.Fatalf("schema const %v, want %s", c, FuseCommandSchema)
	}
	var actions []string
	for _, a := range Actions {
		actions = append(actions, string(a))
	}
	if got := strs(props["action"].(map[string]any)["enum"]); !reflect.DeepEqual(got, actions) {
		t.Fatalf("action enum %q, want %q", got, actions)
	}
	var states []string
	for _, st := range BreakerStates {
		states = append(states, string(st))
	}
	if got := strs(props["state"].(map[string]any)["enum"]); !reflect.DeepEqual(got, states) {
		t.Fatalf("state enum %q, want %q", got, states)
	}
	level := props["level"].(map[string]any)
	if level["minimum"] != json.Number("0") || level["maximum"] != json.Number(strconv.Itoa(MaxFuseCommandLevel)) {
		t.Fatalf("level bounds %v..%v, want 0..%d", level["minimum"], level["maximum"], MaxFuseCommandLevel)
	}
	if got := objectKeys(t, "properties", "target", "properties"); !reflect.DeepEqual(got, []string{"tenant", "service", "model", "variant"}) {
		t.Fatalf("target members %q", got)
	}
	if got := objectKeys(t, "properties", "reasons", "items", "properties"); !reflect.DeepEqual(got, []string{"verdict_id", "text"}) {
		t.Fatalf("reason members %q", got)
	}
	// Every action and state is accepted by Valid, and nothing else.
	for _, a := range actions {
		if !Action(a).Valid() {
			t.Fatalf("%s not Valid", a)
		}
	}
	if Action("half-open").Valid() || BreakerState("close").Valid() {
		t.Fatalf("Valid accepts an unknown value")
	}
	// The patterns agree with Validate on a few probes.
	keyRe := regexp.MustCompile(props["key_id"].(map[string]any)["pattern"].(string))
	sigRe := regexp.MustCompile(props["signature"].(map[string]any)["pattern"].(string))
	for _, k := range []string{"", "k1", "a.b_c-D", "k 1", "k/1", string(bytes.Repeat([]byte("x"), 64)), string(bytes.Repeat([]byte("x"), 65))} {
		if keyRe.MatchString(k) != ValidKeyID(k) {
			t.Fatalf("key id %q: schema pattern and Validate disagree", k)
		}
	}
	for _, sig := range []string{"", string(bytes.Repeat([]byte("a"), 64)), string(bytes.Repeat([]byte("A"), 64)), "abc"} {
		if sigRe.MatchString(sig) != (sig == "" || lowerHex64(sig)) {
			t.Fatalf("signature %q: schema pattern and Validate disagree", sig)
		}
	}
}

// validateSchema checks doc against the subset of JSON Schema 2020-12 the
// fuse command schema uses: type, const, enum, minimum, maximum, minLength,
// pattern, properties, required, additionalProperties: false, items,
// minItems. Numbers must have been decoded as json.Number.
func validateSchema(s map[string]any, doc any, path string) error {
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, doc) {
		return fmt.Errorf("%s: %v is not the const %v", path, doc, c)
	}
	if e, ok := s["enum"]; ok {
		found := false
		for _, x := range e.([]any) {
			if reflect.DeepEqual(x, doc) {
				found = true
			}
		}
		if !found {
			return fmt.Errorf("%s: %v not in enum", path, doc)
		}
	}
	switch s["type"] {
	case "object":
		o, ok := doc.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", path)
		}
		props, _ := s["properties"].(map[string]any)
		for k, v := range o {
			ps, ok := props[k]
			if !ok {
				if s["additionalProperties"] == false {
					return fmt.Errorf("%s: unknown member %s", path, k)
				}
				continue
			}
			if err := validateSchema(ps.(map[string]any), v, path+"."+k); err != nil {
				return err
			}
		}
		if req, ok := s["required"]; ok {
			for _, r := range strs(req) {
				if _, ok := o[r]; !ok {
					return fmt.Errorf("%s: missing %s", path, r)
				}
			}
		}
	case "array":
		a, ok := doc.([]any)
		if !ok {
			return fmt.Errorf("%s: not an array", path)
		}
		if m, ok := s["minItems"]; ok {
			n, _ := m.(json.Number).Int64()
			if int64(len(a)) < n {
				return fmt.Errorf("%s: %d items, want at least %d", path, len(a), n)
			}
		}
		if it, ok := s["items"]; ok {
			for i, x := range a {
				if err := validateSchema(it.(map[string]any), x, path+"["+strconv.Itoa(i)+"]"); err != nil {
					return err
				}
			}
		}
	case "string":
		str, ok := doc.(string)
		if !ok {
			return fmt.Errorf("%s: not a string", path)
		}
		if m, ok := s["minLength"]; ok {
			n, _ := m.(json.Number).Int64()
			if int64(utf8.RuneCountInString(str)) < n {
				return fmt.Errorf("%s: shorter than %d", path, n)
			}
		}
		if p, ok := s["pattern"]; ok && !regexp.MustCompile(p.(string)).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", path, str, p)
		}
	case "integer", "number":
		n, ok := doc.(json.Number)
		if !ok {
			return fmt.Errorf("%s: not a number", path)
		}
		x, ok := new(big.Rat).SetString(string(n))
		if !ok {
			return fmt.Errorf("%s: bad number %s", path, n)
		}
		if s["type"] == "integer" && !x.IsInt() {
			return fmt.Errorf("%s: %s is not an integer", path, n)
		}
		for _, b := range []struct {
			kw   string
			sign int
		}{{"minimum", -1}, {"maximum", 1}} {
			if lim, ok := s[b.kw]; ok {
				l, _ := new(big.Rat).SetString(string(lim.(json.Number)))
				if x.Cmp(l) == b.sign {
					return fmt.Errorf("%s: %s beyond %s %s", path, n, b.kw, lim)
				}
			}
		}
	}
	return nil
}

func TestSchemaValidatorRejects(t *testing.T) {
	// The mini validator must be able to fail, or the golden check proves
	// nothing.
	s := loadSchema(t)
	good, _ := json.Marshal(sampleCommands()[0])
	for _, bad := range []string{
		string(bytes.Replace(good, []byte(`"level":1`), []byte(`"level":7`), 1)),
		string(bytes.Replace(good, []byte(`"action":"degrade"`), []byte(`"action":"x"`), 1)),
		string(bytes.Replace(good, []byte(`"level":1`), []byte(`"level":1,"x":1`), 1)),
		string(bytes.Replace(good, []byte(`"key_id":"k2026-01"`), []byte(`"key_id":"k 1"`), 1)),
		string(bytes.Replace(good, []byte(`"version":1853070413660161`), []byte(`"version":18446744073709551616`), 1)),
	} {
		var doc any
		d := json.NewDecoder(bytes.NewReader([]byte(bad)))
		d.UseNumber()
		if err := d.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if validateSchema(s, doc, "$") == nil {
			t.Fatalf("schema accepted %s", bad)
		}
	}
}
