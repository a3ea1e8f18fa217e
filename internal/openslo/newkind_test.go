package openslo

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/internal/config"
	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/registry"
	"github.com/fusebox-dev/fusebox/schemas"
)

// quotaConfig is a test-only kind with no OpenSLO mapping of its own.
type quotaConfig struct {
	Every time.Duration `yaml:"every"`
	Limit int           `yaml:"limit"`
	Scope []string      `yaml:"scope"`
}

func (c *quotaConfig) Validate() error {
	if c.Limit < 0 {
		return &processors.ConfigError{Field: "limit", Reason: "must not be negative"}
	}
	return nil
}
func (c *quotaConfig) Interval() time.Duration { return c.Every }
func (c *quotaConfig) Metrics() []string       { return []string{"calls"} }
func (c *quotaConfig) Summary() string         { return "quota" }
func (c *quotaConfig) StateShape() any         { return c.Every }

type quota struct{}

func (quota) Interval() time.Duration                        { return time.Minute }
func (quota) ObserveSpan(schemas.Key, *schemas.Span)         {}
func (quota) ObserveCorrection(*schemas.Correction)          {}
func (quota) Evaluate(int64, processors.Emitter)             {}
func (quota) Keys() int                                      { return 0 }
func (quota) Hooks() processors.Hooks                        { return processors.Hooks{} }
func (quota) MarshalBinary() ([]byte, error)                 { return nil, nil }
func (quota) UnmarshalBinary([]byte) error                   { return errors.New("no state") }
func buildQuota(processors.Meta, quotaConfig) (quota, error) { return quota{}, nil }
func defaultQuota() quotaConfig                              { return quotaConfig{Every: time.Minute, Limit: 10} }

// TestKindWithoutMappingExports: a kind the registry gains later, with no
// mapping in this package, exports as an SLO whose annotations carry its
// whole section, and imports back to the same section.
func TestKindWithoutMappingExports(t *testing.T) {
	k := processors.NewKind[quotaConfig, quota]("quota", defaultQuota, defaultQuota, buildQuota)
	kinds := registry.With(k)
	src := "slos:\n  - name: q\n    match: {tenant: [acme]}\n    quota: {every: 5m, limit: 3, scope: [tenant, model]}\n"
	f, err := config.Loader{Kinds: kinds}.Parse("q.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Export(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fusebox.dev/kind: quota\n", "fusebox.dev/every: 5m0s\n", `fusebox.dev/limit: "3"`, "fusebox.dev/scope: '[tenant, model]'\n", "kind: quota\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the export lacks %q:\n%s", want, out)
		}
	}
	res, err := Importer{Kinds: kinds}.Import([]Input{{Name: "q.openslo.yaml", Data: out}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("problems:\n%s", res.Problems.Error())
	}
	g, err := config.Loader{Kinds: kinds}.Parse("imported", res.File)
	if err != nil {
		t.Fatalf("%v\n%s", err, res.File)
	}
	if canonical(t, f) != canonical(t, g) {
		t.Errorf("changed:\n was %s\n now %s", canonical(t, f), canonical(t, g))
	}
	// The shipped kinds do not know it: the import says so.
	res, err = Importer{}.Import([]Input{{Name: "q.openslo.yaml", Data: out}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Problems.Error(), `unknown fusebox kind "quota"`) {
		t.Errorf("problems:\n%s", res.Problems.Error())
	}
}
