package stats

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The reference checks read every *.json of $FUSEBOX_REFDATA (else
// testdata/refdata, SciPy's values kept with the tests), dispatch on the file name
// and compare every case with SciPy's values. A missing directory, an
// unknown or malformed file, or a case with a missing or malformed field
// fails the test: nothing is skipped.

const refdataEnv = "FUSEBOX_REFDATA"

func refdataDir() string {
	if d := os.Getenv(refdataEnv); d != "" {
		return d
	}
	return filepath.Join("testdata", "refdata")
}

// refSuite is one loaded file: check compares every case and returns one
// message per mismatch.
type refSuite struct {
	kind, path string
	cases      int
	check      func() []string
}

// refLoader parses a file's cases (strictly) and returns its check.
type refLoader func(cases []json.RawMessage) (func() []string, error)

func refLoaderFor(kind string) (refLoader, bool) {
	switch kind {
	case "entropy":
		return loadEntropyRef, true
	case "gpd_fit":
		return loadGPDRef, true
	case "ks_2samp":
		return loadKSRef, true
	case "mannwhitney":
		return loadMannWhitneyRef, true
	case "pot_quantile":
		return loadPOTRef, true
	case "slope":
		return loadSlopeRef, true
	case "wilson":
		return loadWilsonRef, true
	}
	return nil, false
}

// loadRefdata loads every *.json file of dir.
func loadRefdata(dir string) ([]refSuite, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reference data directory %q: %w", dir, err)
	}
	var suites []refSuite
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		kind := strings.TrimSuffix(e.Name(), ".json")
		load, ok := refLoaderFor(kind)
		if !ok {
			return nil, fmt.Errorf("%s: unknown reference file (no check for %q)", path, kind)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		var top struct {
			About *string           `json:"about"`
			Cases []json.RawMessage `json:"cases"`
		}
		if err := decodeStrict(raw, &top); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if top.About == nil || *top.About == "" {
			return nil, fmt.Errorf("%s: missing \"about\"", path)
		}
		if len(top.Cases) == 0 {
			return nil, fmt.Errorf("%s: no cases", path)
		}
		check, err := load(top.Cases)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		suites = append(suites, refSuite{kind: kind, path: path, cases: len(top.Cases), check: check})
	}
	if len(suites) == 0 {
		return nil, fmt.Errorf("reference data directory %q has no *.json files", dir)
	}
	return suites, nil
}

// decodeStrict decodes one JSON value, rejecting unknown fields and
// trailing data.
func decodeStrict(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// decodeCases decodes each case strictly into T and validates it.
func decodeCases[T any](cases []json.RawMessage, validate func(*T) error) ([]T, error) {
	out := make([]T, len(cases))
	for i, raw := range cases {
		if err := decodeStrict(raw, &out[i]); err != nil {
			return nil, fmt.Errorf("case %d: %w", i, err)
		}
		if err := validate(&out[i]); err != nil {
			return nil, fmt.Errorf("case %d: %w", i, err)
		}
	}
	return out, nil
}

// need reports the first missing field among name/pointer pairs.
func need(fields ...any) error {
	for i := 0; i+1 < len(fields); i += 2 {
		name := fields[i].(string)
		switch p := fields[i+1].(type) {
		case *float64:
			if p == nil {
				return fmt.Errorf("missing %q", name)
			}
			if math.IsNaN(*p) || math.IsInf(*p, 0) {
				return fmt.Errorf("%q is not finite", name)
			}
		case *int64:
			if p == nil {
				return fmt.Errorf("missing %q", name)
			}
		case *string:
			if p == nil || *p == "" {
				return fmt.Errorf("missing %q", name)
			}
		case []float64:
			if len(p) == 0 {
				return fmt.Errorf("missing or empty %q", name)
			}
		default:
			panic(fmt.Sprintf("need: unsupported type %T", p))
		}
	}
	return nil
}

// relClose reports |got-want| <= rel*|want| or <= abs.
func relClose(got, want, rel, abs float64) bool {
	d := math.Abs(got - want)
	return d <= rel*math.Abs(want) || d <= abs
}

func TestRefdata(t *testing.T) {
	dir := refdataDir()
	suites, err := loadRefdata(dir)
	if err != nil {
		t.Fatalf("loading reference data: %v", err)
	}
	kinds := map[string]bool{}
	for _, s := range suites {
		kinds[s.kind] = true
		t.Run(s.kind, func(t *testing.T) {
			for _, msg := range s.check() {
				t.Error(msg)
			}
			t.Logf("%s: %d cases checked", s.path, s.cases)
		})
	}
	if os.Getenv(refdataEnv) == "" {
		// The project's copy must hold every kind.
		for _, k := range []string{"entropy", "gpd_fit", "ks_2samp", "mannwhitney", "pot_quantile", "slope", "wilson"} {
			if !kinds[k] {
				t.Errorf("%s: no %s.json", dir, k)
			}
		}
	}
}

// --- corruption: the loader and the checks must be able to fail ---

// mutateRef copies the project's reference files to a temp dir after
// applying mutate to the named file's decoded JSON (nil mutate: unchanged).
func mutateRef(t *testing.T, file string, mutate func(doc map[string]any)) string {
	t.Helper()
	src := filepath.Join("testdata", "refdata")
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == file && mutate != nil {
			var doc map[string]any
			if err := json.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			mutate(doc)
			if raw, err = json.Marshal(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func firstCase(doc map[string]any) map[string]any {
	return doc["cases"].([]any)[0].(map[string]any)
}

func TestRefdataLoaderRejectsBadFiles(t *testing.T) {
	cases := []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"missing directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }},
		{"no json files", func(t *testing.T) string { return t.TempDir() }},
		{"unknown file", func(t *testing.T) string {
			d := mutateRef(t, "", nil)
			os.WriteFile(filepath.Join(d, "kurtosis.json"), []byte(`{"about":"x","cases":[{}]}`), 0o644)
			return d
		}},
		{"truncated json", func(t *testing.T) string {
			d := mutateRef(t, "", nil)
			raw, _ := os.ReadFile(filepath.Join(d, "wilson.json"))
			os.WriteFile(filepath.Join(d, "wilson.json"), raw[:len(raw)/2], 0o644)
			return d
		}},
		{"no cases", func(t *testing.T) string {
			return mutateRef(t, "entropy.json", func(doc map[string]any) { doc["cases"] = []any{} })
		}},
		{"missing about", func(t *testing.T) string {
			return mutateRef(t, "entropy.json", func(doc map[string]any) { delete(doc, "about") })
		}},
		{"missing field", func(t *testing.T) string {
			return mutateRef(t, "ks_2samp.json", func(doc map[string]any) { delete(firstCase(doc), "D") })
		}},
		{"missing all p-values", func(t *testing.T) string {
			return mutateRef(t, "ks_2samp.json", func(doc map[string]any) {
				c := firstCase(doc)
				delete(c, "p_exact")
				delete(c, "p_asymp")
				delete(c, "p_auto")
			})
		}},
		{"wrong type", func(t *testing.T) string {
			return mutateRef(t, "gpd_fit.json", func(doc map[string]any) { firstCase(doc)["exceedances"] = "1,2,3" })
		}},
		{"unknown field", func(t *testing.T) string {
			return mutateRef(t, "wilson.json", func(doc map[string]any) { firstCase(doc)["lo"] = 0.1 })
		}},
		{"size mismatch", func(t *testing.T) string {
			return mutateRef(t, "ks_2samp.json", func(doc map[string]any) { firstCase(doc)["n"] = 9 })
		}},
		{"bad quantile key", func(t *testing.T) string {
			return mutateRef(t, "pot_quantile.json", func(doc map[string]any) {
				firstCase(doc)["quantiles"] = map[string]any{"p99": 1.0}
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := loadRefdata(c.dir(t)); err == nil {
				t.Fatal("loader accepted a bad reference directory")
			} else {
				t.Logf("rejected: %v", err)
			}
		})
	}
}

func TestRefdataChecksDetectWrongValues(t *testing.T) {
	bump := func(key string, by float64) func(map[string]any) {
		return func(doc map[string]any) {
			c := firstCase(doc)
			c[key] = c[key].(float64) + by
		}
	}
	cases := []struct {
		file   string
		mutate func(map[string]any)
	}{
		{"ks_2samp.json", bump("D", 1e-9)},
		{"ks_2samp.json", bump("p_asymp", 1e-4)},
		{"gpd_fit.json", bump("scipy_loglik", 0.01)},
		{"gpd_fit.json", bump("scipy_xi", 0.01)},
		{"pot_quantile.json", func(doc map[string]any) {
			q := firstCase(doc)["quantiles"].(map[string]any)
			q["0.999"] = q["0.999"].(float64) * (1 + 1e-8)
		}},
		{"mannwhitney.json", bump("U", 1)},
		{"slope.json", bump("theil_low95", 1e-8)},
		{"slope.json", bump("ols_pvalue", 1e-15)},
		{"entropy.json", bump("entropy_bits", 1e-11)},
		{"wilson.json", bump("high", 1e-8)},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			suites, err := loadRefdata(mutateRef(t, c.file, c.mutate))
			if err != nil {
				t.Fatal(err)
			}
			kind := strings.TrimSuffix(c.file, ".json")
			for _, s := range suites {
				if s.kind != kind {
					if msgs := s.check(); len(msgs) != 0 {
						t.Errorf("unmodified %s failed: %v", s.kind, msgs)
					}
					continue
				}
				msgs := s.check()
				if len(msgs) == 0 {
					t.Fatal("check accepted a corrupted reference value")
				}
				t.Logf("detected: %s", msgs[0])
			}
		})
	}
}
