package schemas

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// corrSchemaDoc reads correction.v1.schema.json as generic JSON.
func corrSchemaDoc(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("correction.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("correction.v1.schema.json is not JSON: %v", err)
	}
	return doc
}

func corrObj(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: want an object, got %T", what, v)
	}
	return m
}

func corrStrings(t *testing.T, v any, what string) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%s: want an array, got %T", what, v)
	}
	out := make([]string, len(arr))
	for i, x := range arr {
		if out[i], ok = x.(string); !ok {
			t.Fatalf("%s[%d]: want a string, got %T", what, i, x)
		}
	}
	return out
}

// corrNumber returns the number at key of m, and whether there is one.
func corrNumber(t *testing.T, m map[string]any, key, what string) (int, bool) {
	t.Helper()
	v, ok := m[key]
	if !ok {
		return 0, false
	}
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%s.%s: want an integer, got %v", what, key, v)
	}
	return int(f), true
}

// TestCorrectionSchemaAgreesWithCode checks that the JSON Schema file and
// the decoder's property table state the same contract: draft, closed
// object, properties, required list, join-key rule, kind enum, version,
// string bounds, trace id pattern and context bounds.
func TestCorrectionSchemaAgreesWithCode(t *testing.T) {
	doc := corrSchemaDoc(t)
	if doc["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v, want draft 2020-12", doc["$schema"])
	}
	if doc["type"] != "object" || doc["additionalProperties"] != false {
		t.Errorf("want a closed object (type object, additionalProperties false), got type %v, additionalProperties %v",
			doc["type"], doc["additionalProperties"])
	}

	props := corrObj(t, doc["properties"], "properties")
	var goNames, goRequired []string
	for _, p := range correctionProps {
		goNames = append(goNames, p.name)
		if p.required {
			goRequired = append(goRequired, p.name)
		}
	}
	var schemaNames []string
	for name := range props {
		schemaNames = append(schemaNames, name)
	}
	slices.Sort(schemaNames)
	slices.Sort(goNames)
	if !slices.Equal(schemaNames, goNames) {
		t.Errorf("properties: schema has %v, code has %v", schemaNames, goNames)
	}
	required := corrStrings(t, doc["required"], "required")
	slices.Sort(required)
	slices.Sort(goRequired)
	if !slices.Equal(required, goRequired) {
		t.Errorf("required: schema has %v, code has %v", required, goRequired)
	}

	anyOf, ok := doc["anyOf"].([]any)
	if !ok || len(anyOf) != 2 {
		t.Fatalf("anyOf: want the two join-key alternatives, got %v", doc["anyOf"])
	}
	var joinKeys []string
	for i, alt := range anyOf {
		joinKeys = append(joinKeys, corrStrings(t, corrObj(t, alt, "anyOf")["required"], "anyOf["+string(rune('0'+i))+"].required")...)
	}
	if !slices.Equal(joinKeys, []string{"trace_id", "session_id"}) {
		t.Errorf("anyOf: want trace_id or session_id required, got %v", joinKeys)
	}

	if v, _ := corrNumber(t, corrObj(t, props["schema_version"], "schema_version"), "const", "schema_version"); v != CorrectionSchemaVersion {
		t.Errorf("schema_version const = %d, want %d", v, CorrectionSchemaVersion)
	}

	kinds := corrStrings(t, corrObj(t, props["kind"], "kind")["enum"], "kind.enum")
	var goKinds []string
	for _, k := range CorrectionKinds {
		goKinds = append(goKinds, string(k))
	}
	if !slices.Equal(kinds, goKinds) {
		t.Errorf("kind enum: schema has %v, code has %v", kinds, goKinds)
	}

	for _, p := range correctionProps {
		sp := corrObj(t, props[p.name], p.name)
		min, hasMin := corrNumber(t, sp, "minLength", p.name)
		max, hasMax := corrNumber(t, sp, "maxLength", p.name)
		if hasMin != (p.minLen > 0) || min != p.minLen {
			t.Errorf("%s: schema minLength %v (present %v), code %d", p.name, min, hasMin, p.minLen)
		}
		if hasMax != (p.maxLen > 0) || max != p.maxLen {
			t.Errorf("%s: schema maxLength %v (present %v), code %d", p.name, max, hasMax, p.maxLen)
		}
		isString := p.minLen > 0 || p.maxLen > 0 || p.name == "time" || p.name == "trace_id"
		if isString && sp["type"] != "string" {
			t.Errorf("%s: schema type %v, want string", p.name, sp["type"])
		}
	}

	tp := corrObj(t, props["trace_id"], "trace_id")
	if tp["pattern"] != correctionTraceIDPattern {
		t.Errorf("trace_id pattern = %v, code has %q", tp["pattern"], correctionTraceIDPattern)
	}
	if c, _ := corrObj(t, tp["not"], "trace_id.not")["const"].(string); c != (TraceID{}).String() {
		t.Errorf("trace_id: want the all-zero id refused, got not = %v", tp["not"])
	}
	if corrObj(t, props["time"], "time")["format"] != "date-time" {
		t.Errorf("time: want format date-time")
	}

	ctx := corrObj(t, props["context"], "context")
	if ctx["type"] != "object" {
		t.Errorf("context type = %v, want object", ctx["type"])
	}
	if n, _ := corrNumber(t, ctx, "maxProperties", "context"); n != correctionMaxContext {
		t.Errorf("context maxProperties = %d, code has %d", n, correctionMaxContext)
	}
	if n, _ := corrNumber(t, corrObj(t, ctx["propertyNames"], "context.propertyNames"), "maxLength", "context.propertyNames"); n != correctionMaxContextKey {
		t.Errorf("context propertyNames maxLength = %d, code has %d", n, correctionMaxContextKey)
	}
	ap := corrObj(t, ctx["additionalProperties"], "context.additionalProperties")
	if n, _ := corrNumber(t, ap, "maxLength", "context.additionalProperties"); n != correctionMaxContextValue || ap["type"] != "string" {
		t.Errorf("context values: schema %v, code: strings up to %d", ap, correctionMaxContextValue)
	}
}
