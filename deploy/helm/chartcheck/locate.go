package chartcheck

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	kjson "sigs.k8s.io/json"
)

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// locate finds the field whose value made decoding fail when the error
// does not say (a type with its own UnmarshalJSON, such as a resource
// quantity, reports only its own reason): it walks the decoded JSON v
// along the Go type t and decodes each value of such a type on its own.
// It returns the field's path (spec.template.spec.containers[0]...) and
// that value's error, or "" when no single value fails.
func locate(v any, t reflect.Type, path string) (string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		b, _ := json.Marshal(v)
		if err := kjson.UnmarshalCaseSensitivePreserveInts(b, reflect.New(t).Interface()); err != nil {
			return path, err
		}
		return "", nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous && name == "" || strings.Contains(opts, "inline") {
				if p, err := locate(m, f.Type, path); p != "" {
					return p, err
				}
				continue
			}
			if name == "" {
				name = f.Name
			}
			if fv, ok := m[name]; ok {
				if p, err := locate(fv, f.Type, join(path, name)); p != "" {
					return p, err
				}
			}
		}
	case reflect.Slice, reflect.Array:
		s, ok := v.([]any)
		if !ok {
			return "", nil
		}
		for i, e := range s {
			if p, err := locate(e, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p, err
			}
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return "", nil
		}
		for k, e := range m {
			if p, err := locate(e, t.Elem(), join(path, k)); p != "" {
				return p, err
			}
		}
	}
	return "", nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
