package chartcheck

import (
	"errors"
	"fmt"
	"strings"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/lint/support"
)

// KubeVersion is the Kubernetes version the chart is linted and rendered
// for (.Capabilities.KubeVersion): the oldest the chart supports
// (Chart.yaml's kubeVersion), so that an object or field newer than that
// is caught by the strict decoding only if it is also unknown to k8s.io/api.
const KubeVersion = "v1.27.0"

// Release is the release the chart is rendered as.
type Release struct {
	Name      string   // default "fusebox"
	Namespace string   // default "fusebox"
	Values    []string // values files, applied in order over the chart's values.yaml
	Set       []string // --set style overrides, applied last
}

func (r Release) withDefaults() Release {
	if r.Name == "" {
		r.Name = "fusebox"
	}
	if r.Namespace == "" {
		r.Namespace = "fusebox"
	}
	return r
}

// mergedValues reads the values files and --set overrides as `helm`
// does; the chart's own values.yaml is applied under them by Helm.
func (r Release) mergedValues() (map[string]any, error) {
	opts := values.Options{ValueFiles: r.Values, Values: r.Set}
	return opts.MergeValues(getter.Providers{})
}

// Lint runs `helm lint --strict` on the chart directory: every warning
// and error of Helm's linter (Chart.yaml, values, templates rendered with
// these values) fails it, each message with its path.
func Lint(chartDir string, r Release) error {
	r = r.withDefaults()
	vals, err := r.mergedValues()
	if err != nil {
		return err
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return err
	}
	l := action.NewLint()
	l.Strict = true
	l.Namespace = r.Namespace
	l.KubeVersion = kv
	res := l.Run([]string{chartDir}, vals)
	var errs []error
	for _, m := range res.Messages {
		if m.Severity > support.InfoSev { // warnings and errors, as --strict
			errs = append(errs, fmt.Errorf("helm lint: %s", m))
		}
	}
	if len(errs) == 0 {
		errs = res.Errors
	}
	if len(errs) == 0 && res.TotalChartsLinted != 1 {
		return fmt.Errorf("helm lint: %d charts linted in %s, want 1", res.TotalChartsLinted, chartDir)
	}
	return errors.Join(errs...)
}

// Render runs `helm template` on the chart directory (client only: no
// cluster) and returns the rendered manifest: the objects as YAML
// documents, each after a "# Source: <chart>/templates/<file>" line.
func Render(chartDir string, r Release) (string, error) {
	r = r.withDefaults()
	vals, err := r.mergedValues()
	if err != nil {
		return "", err
	}
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", fmt.Errorf("load chart %s: %w", chartDir, err)
	}
	kv, err := chartutil.ParseKubeVersion(KubeVersion)
	if err != nil {
		return "", err
	}
	install := action.NewInstall(&action.Configuration{})
	install.DryRun = true
	install.ClientOnly = true
	install.Replace = true
	install.IncludeCRDs = true
	install.ReleaseName = r.Name
	install.Namespace = r.Namespace
	install.KubeVersion = kv
	rel, err := install.Run(chrt, vals)
	if err != nil {
		return "", fmt.Errorf("helm template: %w", err)
	}
	var b strings.Builder
	b.WriteString(rel.Manifest)
	for _, h := range rel.Hooks {
		fmt.Fprintf(&b, "\n---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return b.String(), nil
}

// Check lints, renders and decodes the chart with the release's values
// and checks the objects' references: the whole check of one value set.
// It returns the decoded objects and the manifest.
func Check(chartDir string, r Release) ([]Object, string, error) {
	if err := Lint(chartDir, r); err != nil {
		return nil, "", err
	}
	manifest, err := Render(chartDir, r)
	if err != nil {
		return nil, "", err
	}
	objs, err := Decode(manifest)
	if err != nil {
		return nil, manifest, err
	}
	return objs, manifest, CheckReferences(objs)
}
