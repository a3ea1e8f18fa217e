package openslo

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
	"go.yaml.in/yaml/v3"
)

// fieldValues returns the yaml-encoded value of each field of cfg (a
// kind's *Config), by its yaml key, as flow YAML on one line ("10m0s",
// "[tenant, service]").
func fieldValues(cfg processors.Config) (map[string]string, []string, error) {
	var n yaml.Node
	if err := n.Encode(cfg); err != nil {
		return nil, nil, err
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("openslo: %T does not encode as a mapping", cfg)
	}
	out := map[string]string{}
	var keys []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, n.Content[i+1]
		flow(v)
		b, err := yaml.Marshal(v)
		if err != nil {
			return nil, nil, err
		}
		out[k] = strings.TrimSpace(string(b))
		keys = append(keys, k)
	}
	return out, keys, nil
}

// flow sets flow style on every collection under n: one line per value.
func flow(n *yaml.Node) {
	if n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode {
		n.Style = yaml.FlowStyle
	}
	for _, c := range n.Content {
		flow(c)
	}
}

// changedFields returns the fields of cfg whose value differs from the
// kind's default, less skip, as annotations (Prefix + key), and every
// field's value.
func changedFields(k processors.Kind, cfg processors.Config, skip ...string) (map[string]string, error) {
	vals, keys, err := fieldValues(cfg)
	if err != nil {
		return nil, err
	}
	defs, _, err := fieldValues(k.Default())
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, key := range keys {
		if contains(skip, key) || vals[key] == defs[key] {
			continue
		}
		out[Prefix+key] = vals[key]
	}
	return out, nil
}

// yamlKeys lists the yaml keys of cfg's struct type.
func yamlKeys(cfg processors.Config) []string {
	t := reflect.TypeOf(cfg)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		tag := strings.Split(t.Field(i).Tag.Get("yaml"), ",")[0]
		if tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

// decodeFields decodes values (yaml key -> flow YAML) into cfg. It
// returns one error per key, keyed by it: unknown key or a value of the
// wrong type.
func decodeFields(cfg processors.Config, values map[string]string, order []string) map[string]string {
	known := yamlKeys(cfg)
	errs := map[string]string{}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, key := range order {
		if !contains(known, key) {
			errs[key] = "not a field of this kind (fields: " + strings.Join(known, ", ") + ")"
			continue
		}
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(values[key]), &v); err != nil || len(v.Content) == 0 {
			errs[key] = fmt.Sprintf("not a YAML value: %q", values[key])
			continue
		}
		// Decode each field alone first, so that a wrong value names its
		// own key.
		one := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v.Content[0]}}
		probe := reflect.New(reflect.TypeOf(cfg).Elem()).Interface()
		if err := one.Decode(probe); err != nil {
			errs[key] = "wrong value " + strconv.Quote(values[key]) + ": " + yamlReason(err)
			continue
		}
		m.Content = append(m.Content, one.Content...)
	}
	if len(m.Content) > 0 {
		if err := m.Decode(cfg); err != nil {
			errs[""] = err.Error()
		}
	}
	return errs
}

// yamlReason strips the "yaml: unmarshal errors:\n  line 1: " decoration.
func yamlReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, ": cannot"); i >= 0 {
		return strings.TrimSpace(msg[i+2:])
	}
	return msg
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// shorthand writes d as OpenSLO's duration-shorthand (a positive integer
// and one of m, h, d, w), the largest unit that divides it; ok is false
// when d is not a positive whole number of minutes.
func shorthand(d time.Duration) (string, bool) {
	if d <= 0 || d%time.Minute != 0 {
		return "", false
	}
	for _, u := range []struct {
		s string
		d time.Duration
	}{{"w", 7 * 24 * time.Hour}, {"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.s, true
		}
	}
	return "", false
}

// parseShorthand reads a duration-shorthand of the units m, h, d and w.
// M, Q and Y (calendar lengths) are refused: fusebox windows are fixed
// lengths of event time.
func parseShorthand(s string) (time.Duration, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("want a duration-shorthand such as 5m, 1h, 28d, got %q", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive whole number before the unit, got %q", s)
	}
	var u time.Duration
	switch s[len(s)-1] {
	case 'm':
		u = time.Minute
	case 'h':
		u = time.Hour
	case 'd':
		u = 24 * time.Hour
	case 'w':
		u = 7 * 24 * time.Hour
	case 'M', 'Q', 'Y':
		return 0, fmt.Errorf("%q: calendar units (M, Q, Y) are not mapped: fusebox windows are fixed lengths of event time; write days (e.g. 30d)", s)
	default:
		return 0, fmt.Errorf("%q: unknown unit; use m, h, d or w", s)
	}
	if n > math.MaxInt64/int64(u) {
		return 0, fmt.Errorf("%q is too long", s)
	}
	return time.Duration(n) * u, nil
}

// complement returns 1 - target as the fusebox value it stands for (alpha,
// max_rate): the first of candidates whose complement export writes is
// exactly target (so that a value survives the round trip bit for bit),
// else 1 - target rounded to 12 significant digits (a target written by
// hand: 0.99 gives 0.01, not 0.010000000000000009).
func complement(target float64, candidates ...float64) float64 {
	for _, c := range candidates {
		if 1-c == target {
			return c
		}
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(1-target, 'g', 12, 64), 64)
	return v
}
