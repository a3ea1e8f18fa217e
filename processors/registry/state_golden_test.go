package registry_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/registry"
)

// TestStateShapesUnchanged pins, as the JSON the state ids hash
// (config.StateID marshals StateShape into the id), the state shape of
// every kind's defaults and of every SLO of the example files: a changed
// line is a changed StateID, which drops that SLO's checkpointed state at
// the next restart of every deployment. Run with -update only when that
// is intended.
func TestStateShapesUnchanged(t *testing.T) {
	var b strings.Builder
	line := func(what string, shape any) {
		j, err := json.Marshal(shape)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		fmt.Fprintf(&b, "%s %s\n", what, j)
	}
	for _, k := range registry.Kinds() {
		line("default "+k.Name, k.Default().StateShape())
	}
	for _, path := range []string{"../../examples/fusebox.yaml"} {
		f, err := config.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.SLOs {
			sec, ok := s.Processor()
			if !ok {
				t.Fatalf("%s: slo %s has no processor", path, s.Name)
			}
			line(path[len("../../"):]+" "+s.Name+" "+sec.Kind.Name, sec.Config.StateShape())
		}
	}
	f, err := config.Parse("cusum.yaml", []byte(`slos:
  - name: cusum
    burnrate:
      method: cusum
  - name: canary
    drift:
      mode: canary
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range f.SLOs {
		sec, _ := s.Processor()
		line(s.Name+" "+sec.Kind.Name, sec.Config.StateShape())
	}
	proctest.Golden(t, "state_shapes.txt", b.String())
}
