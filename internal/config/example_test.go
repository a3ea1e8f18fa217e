package config_test

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/internal/config"
)

const examplePath = "../../examples/fusebox.yaml"

// TestExampleLoads checks that the annotated example loads.
func TestExampleLoads(t *testing.T) {
	if _, err := config.Load(examplePath); err != nil {
		t.Fatalf("%s does not load:\n%v", examplePath, err)
	}
}

// TestExampleListsEveryOption walks the File type and requires every
// option (every yaml field of every section, of every processor section
// and of a breaker rule) to appear in the example.
func TestExampleListsEveryOption(t *testing.T) {
	b, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	collectPresent(root.Content[0], "", present)
	var want []string
	collectFields(reflect.TypeOf(config.File{}), "", &want)
	for _, f := range want {
		if !present[f] {
			t.Errorf("%s does not show option %s", examplePath, f)
		}
	}
	if len(want) < 100 {
		t.Fatalf("only %d options found in the File type: the walk is broken", len(want))
	}
}

// collectPresent records the paths of the keys in the YAML, with list
// indexes written "[]".
func collectPresent(n *yaml.Node, path string, out map[string]bool) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := join(path, n.Content[i].Value)
			out[p] = true
			collectPresent(n.Content[i+1], p, out)
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			collectPresent(c, path+"[]", out)
		}
	}
}

// collectFields lists every yaml field path of t.
func collectFields(t reflect.Type, path string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if t.PkgPath() == "time" {
			return
		}
		for i := 0; i < t.NumField(); i++ {
			tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			p := join(path, tag)
			*out = append(*out, p)
			collectFields(t.Field(i).Type, p, out)
		}
	case reflect.Slice:
		collectFields(t.Elem(), path+"[]", out)
	}
}

func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// TestExampleShowsDefaults requires the example's values to be the
// defaults (apart from the few marked "not a default" in it), so that it
// documents them: every section equals config.Default(), every processor
// section its processor's DefaultConfig (required fields aside), the
// breaker the default policy.
func TestExampleShowsDefaults(t *testing.T) {
	f, err := config.Load(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	d := config.Default()
	same := func(what string, got, want any) {
		t.Helper()
		// %+v prints nil and empty slices alike, which is what the file
		// can say ("addr: []" is the default nil list).
		if g, w := fmt.Sprintf("%+v", got), fmt.Sprintf("%+v", want); g != w {
			t.Errorf("%s in the example is not the default:\n got  %s\n want %s", what, g, w)
		}
	}
	same("kafka", f.Kafka, d.Kafka)
	same("topics", f.Topics, d.Topics)
	same("attributes", f.Attributes, d.Attributes)
	same("limits", f.Limits, d.Limits)
	same("keys", f.Keys, d.Keys)
	same("time", f.Time, d.Time)
	same("rollups", f.Rollups, d.Rollups)
	same("effect", f.Effect, d.Effect)
	same("signing", f.Signing, d.Signing)
	same("sinks", f.Sinks, d.Sinks)
	same("http", f.HTTP, d.HTTP)
	same("log", f.Log, d.Log)

	pol := config.DefaultBreaker()
	pol.Rules = slices.Clone(pol.Rules)
	pol.Rules[0].Target = pol.Target // shown explicitly, same meaning
	same("breaker", f.Breaker, pol)

	seen := map[string]bool{}
	for _, s := range f.SLOs {
		sec, _ := s.Processor()
		// Every field at its default, but those that have none (where
		// the kind's Sample differs from its Default: the budgets).
		c, def, sample := reflect.ValueOf(sec.Config).Elem(), reflect.ValueOf(sec.Kind.Default()).Elem(), reflect.ValueOf(sec.Kind.Sample()).Elem()
		want := reflect.New(def.Type()).Elem()
		want.Set(def)
		for i := range def.NumField() {
			if !reflect.DeepEqual(def.Field(i).Interface(), sample.Field(i).Interface()) {
				want.Field(i).Set(c.Field(i))
			}
		}
		same("slo "+s.Name, c.Interface(), want.Interface())
		seen[sec.Kind.Name] = true
	}
	if len(seen) != 6 {
		t.Errorf("the example shows processors %v, want all six", seen)
	}
}
