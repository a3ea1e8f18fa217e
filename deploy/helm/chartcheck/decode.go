package chartcheck

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Object is one rendered object, decoded into its API type.
type Object struct {
	Source     string // the template that rendered it, e.g. fusebox/templates/statefulset.yaml
	APIVersion string
	Kind       string
	Name       string
	// Value is a pointer to the API type: *appsv1.StatefulSet,
	// *corev1.ConfigMap, *monitoringv1.PrometheusRule, ...
	Value any
}

func (o Object) String() string { return fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, o.Source) }

// apiTypes maps apiVersion/kind to a new value of its API type: the kinds
// the chart renders. Another kind is an error (add its type here), so a
// misspelt apiVersion or kind fails too.
var apiTypes = map[string]func() any{
	"v1/ConfigMap":                            func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                               func() any { return new(corev1.Secret) },
	"v1/Service":                              func() any { return new(corev1.Service) },
	"v1/ServiceAccount":                       func() any { return new(corev1.ServiceAccount) },
	"apps/v1/StatefulSet":                     func() any { return new(appsv1.StatefulSet) },
	"policy/v1/PodDisruptionBudget":           func() any { return new(policyv1.PodDisruptionBudget) },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return new(monitoringv1.ServiceMonitor) },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return new(monitoringv1.PrometheusRule) },
}

var sourceLine = regexp.MustCompile(`(?m)^# Source: (\S+)\s*$`)

// Decode splits a rendered manifest into its objects and decodes each
// strictly into its API type, as the API server's strict field
// validation does (sigs.k8s.io/json, case-sensitive): an unknown or
// duplicate field, a value of the wrong type, an unknown kind or a
// document without a name is an error naming the object (kind, name,
// template) and the field's path. Every error is reported, not only the
// first.
func Decode(manifest string) ([]Object, error) {
	var (
		objs []Object
		errs []error
	)
	for i, doc := range splitDocuments(manifest) {
		src := fmt.Sprintf("document %d", i+1)
		if m := sourceLine.FindStringSubmatch(doc); m != nil {
			src = m[1]
		}
		if strings.TrimSpace(stripComments(doc)) == "" {
			continue // a template that rendered nothing
		}
		o, err := decodeObject(src, []byte(doc))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs = append(objs, o)
	}
	if len(objs) == 0 && len(errs) == 0 {
		errs = append(errs, errors.New("the manifest holds no object"))
	}
	return objs, errors.Join(errs...)
}

func decodeObject(src string, doc []byte) (Object, error) {
	o := Object{Source: src}
	// Duplicate keys are errors here; YAML-only syntax becomes JSON.
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return o, fmt.Errorf("%s: not valid YAML: %w", src, err)
	}
	var tm struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return o, fmt.Errorf("%s: %w", src, err)
	}
	o.APIVersion, o.Kind, o.Name = tm.APIVersion, tm.Kind, tm.Metadata.Name
	newValue, ok := apiTypes[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return o, fmt.Errorf("%s: apiVersion %q kind %q: no API type known for it (the chart renders %s)", o, tm.APIVersion, tm.Kind, strings.Join(knownKinds(), ", "))
	}
	if o.Name == "" {
		return o, fmt.Errorf("%s: metadata.name is empty", o)
	}
	o.Value = newValue()
	strict, err := kjson.UnmarshalStrict(js, o.Value, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		var generic any
		if kjson.UnmarshalCaseSensitivePreserveInts(js, &generic) == nil {
			if path, ferr := locate(generic, reflect.TypeOf(o.Value), ""); path != "" {
				return o, fmt.Errorf("%s: %s: %w", o, path, ferr)
			}
		}
		return o, fmt.Errorf("%s: %w", o, err)
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return o, fmt.Errorf("%s: strict decoding into %T: %s", o, o.Value, strings.Join(msgs, "; "))
	}
	return o, nil
}

// splitDocuments splits a YAML stream on its "---" separator lines.
func splitDocuments(s string) []string {
	var docs []string
	var cur strings.Builder
	for _, line := range strings.SplitAfter(s, "\n") {
		if strings.TrimRight(line, " \t\r\n") == "---" {
			docs = append(docs, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteString(line)
	}
	return append(docs, cur.String())
}

func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

func knownKinds() []string {
	var out []string
	for k := range apiTypes {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
