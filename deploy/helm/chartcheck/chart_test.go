package chartcheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test; the rules and dashboard it ships are
// deploy/prometheus/fusebox.rules.yml and deploy/grafana/fusebox.json.
const (
	chartDir      = "../fusebox"
	rulesFile     = "../../prometheus/fusebox.rules.yml"
	dashboardFile = "../../grafana/fusebox.json"
)

// valueSets are the values the chart is checked with: its defaults and
// the two files of its ci/ directory.
var valueSets = []struct {
	name  string
	files []string
	kinds []string // the kinds rendered, sorted
}{
	{"default", nil, []string{"ConfigMap", "PodDisruptionBudget", "Service", "ServiceAccount", "StatefulSet"}},
	{"secure", []string{chartDir + "/ci/secure-values.yaml"}, []string{"ConfigMap", "ConfigMap", "PodDisruptionBudget", "PrometheusRule", "Service", "ServiceAccount", "ServiceMonitor", "StatefulSet"}},
	{"scaled", []string{chartDir + "/ci/scaled-values.yaml"}, []string{"ConfigMap", "PodDisruptionBudget", "Secret", "Service", "ServiceAccount", "StatefulSet"}},
}

// rendered lints, renders and decodes the chart with the values files,
// failing the test on any error.
func rendered(t *testing.T, r Release) (string, []Object) {
	t.Helper()
	objs, manifest, err := Check(chartDir, r)
	if err != nil {
		t.Fatalf("values %v: %v\n%s", r.Values, err, manifest)
	}
	return manifest, objs
}

func only[T any](t *testing.T, objs []Object, kind string) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if o.Kind == kind {
			found = append(found, o.Value.(T))
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d objects of kind %s, want 1", len(found), kind)
	}
	return found[0]
}

// values reads the chart's values.yaml with the files over it (a shallow
// view for the assertions: the keys the tests read).
type chartValues struct {
	ReplicaCount    int32   `json:"replicaCount"`
	GoMemLimitRatio float64 `json:"goMemLimitRatio"`
	Kafka           struct {
		Brokers         []string `json:"brokers"`
		KeyedPartitions int      `json:"keyedPartitions"`
	} `json:"kafka"`
	Signing struct {
		ExistingSecret string `json:"existingSecret"`
		SecretKey      string `json:"secretKey"`
		Keys           string `json:"keys"`
	} `json:"signing"`
	Resources corev1.ResourceRequirements `json:"resources"`
}

func loadValues(t *testing.T, files []string) chartValues {
	t.Helper()
	var v chartValues
	for _, f := range append([]string{chartDir + "/values.yaml"}, files...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	return v
}

// TestChartRendersValidObjects lints and renders the chart with each value
// set, decodes every object strictly into its API type and checks the
// references between them, then what the deployment needs of them: the
// pod name as the static group instance id, probes on /healthz and
// /readyz, GOMEMLIMIT a fraction of the memory limit, the signing keys a
// mounted Secret and never an environment variable or argument.
func TestChartRendersValidObjects(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			manifest, objs := rendered(t, Release{Values: vs.files})
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.Kind)
			}
			slices.Sort(kinds)
			if !slices.Equal(kinds, vs.kinds) {
				t.Errorf("rendered kinds %v, want %v", kinds, vs.kinds)
			}
			v := loadValues(t, vs.files)
			sts := only[*appsv1.StatefulSet](t, objs, "StatefulSet")
			checkStatefulSet(t, sts, v)
			checkSigningKeys(t, manifest, objs, sts, v)
			checkConfigMounts(t, objs, sts)
			pdb := only[*policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget")
			if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("PodDisruptionBudget maxUnavailable %v, want 1", pdb.Spec.MaxUnavailable)
			}
			svc := only[*corev1.Service](t, objs, "Service")
			if !svc.Spec.PublishNotReadyAddresses {
				t.Error("Service: not-ready pods are not published: Prometheus would stop scraping fusebox_ready == 0")
			}
			t.Logf("%d objects: %v", len(objs), kinds)
		})
	}
}

func checkStatefulSet(t *testing.T, sts *appsv1.StatefulSet, v chartValues) {
	t.Helper()
	if sts.Spec.Replicas == nil || *sts.Spec.Replicas != v.ReplicaCount {
		t.Errorf("replicas %v, want %d", sts.Spec.Replicas, v.ReplicaCount)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	// Static membership: --instance-id $(POD_NAME), POD_NAME the pod's name.
	i := slices.Index(c.Args, "--instance-id")
	if i < 0 || i+1 >= len(c.Args) || c.Args[i+1] != "$(POD_NAME)" {
		t.Errorf("args %v: want --instance-id $(POD_NAME)", c.Args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_NAME"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("env POD_NAME %+v: want the downward API's metadata.name", e)
	}
	for _, p := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path {
			t.Errorf("%s probe %+v: want GET %s", p.name, p.probe, p.path)
		}
	}
	// GOMEMLIMIT: goMemLimitRatio of the memory limit, in MiB.
	limit := c.Resources.Limits.Memory()
	if want := v.Resources.Limits.Memory(); limit.Cmp(*want) != 0 || limit.IsZero() {
		t.Errorf("memory limit %v, want the values' %v", limit, want)
	}
	wantMiB := int64(float64(limit.Value()) * v.GoMemLimitRatio / (1 << 20))
	if got := env["GOMEMLIMIT"].Value; got != formatMiB(wantMiB) {
		t.Errorf("GOMEMLIMIT %q, want %s (%.2f of %v)", got, formatMiB(wantMiB), v.GoMemLimitRatio, limit)
	}
	if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Error("the container's root file system is writable")
	}
}

func formatMiB(n int64) string { return fmt.Sprintf("%dMiB", n) }

// checkSigningKeys: the keys come from a Secret volume mounted read-only,
// the config's signing.keys_file is the file in it, and no environment
// variable or argument carries them.
func checkSigningKeys(t *testing.T, manifest string, objs []Object, sts *appsv1.StatefulSet, v chartValues) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	secretName := v.Signing.ExistingSecret
	if secretName == "" {
		secretName = only[*corev1.Secret](t, objs, "Secret").Name
	}
	var vol *corev1.Volume
	for i := range spec.Volumes {
		if s := spec.Volumes[i].Secret; s != nil && s.SecretName == secretName {
			vol = &spec.Volumes[i]
		}
	}
	if vol == nil {
		t.Fatalf("no volume of Secret %s in %+v", secretName, spec.Volumes)
	}
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if c.VolumeMounts[i].Name == vol.Name {
			mount = &c.VolumeMounts[i]
		}
	}
	if mount == nil || !mount.ReadOnly {
		t.Fatalf("signing-key volume %s mounted %+v, want read-only", vol.Name, mount)
	}
	cfg := configFile(t, objs)
	var f struct {
		Signing struct {
			KeysFile string `json:"keys_file"`
		} `json:"signing"`
	}
	if err := yaml.Unmarshal([]byte(cfg), &f); err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(mount.MountPath, v.Signing.SecretKey); f.Signing.KeysFile != want {
		t.Errorf("signing.keys_file %q, want %q (the mounted Secret's key)", f.Signing.KeysFile, want)
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == secretName {
			t.Errorf("env %s reads the signing-key Secret %s: the keys must not be in the environment", e.Name, secretName)
		}
	}
	if v.Signing.Keys != "" {
		for _, line := range strings.Fields(v.Signing.Keys) {
			_, secret, _ := strings.Cut(line, ":")
			if n := strings.Count(manifest, secret); n != 1 {
				t.Errorf("the secret of key %s appears %d times in the manifest, want once (in its Secret)", line[:strings.IndexByte(line, ':')], n)
			}
		}
	}
}

// checkConfigMounts: every file the config names (TLS CA, certificate,
// key) is in a Secret volume mounted read-only where the config looks,
// and every password_env is set from a Secret (secretKeyRef), not a
// literal value.
func checkConfigMounts(t *testing.T, objs []Object, sts *appsv1.StatefulSet) {
	t.Helper()
	type tls struct {
		Enabled  bool   `json:"enabled"`
		CAFile   string `json:"ca_file"`
		CertFile string `json:"cert_file"`
		KeyFile  string `json:"key_file"`
	}
	var f struct {
		Kafka struct {
			TLS  tls `json:"tls"`
			SASL struct {
				PasswordEnv string `json:"password_env"`
			} `json:"sasl"`
		} `json:"kafka"`
		Sinks struct {
			ClickHouse struct {
				TLS         tls    `json:"tls"`
				PasswordEnv string `json:"password_env"`
			} `json:"clickhouse"`
		} `json:"sinks"`
	}
	if err := yaml.Unmarshal([]byte(configFile(t, objs)), &f); err != nil {
		t.Fatal(err)
	}
	spec := sts.Spec.Template.Spec
	c := spec.Containers[0]
	secretVolumes := map[string]*corev1.SecretVolumeSource{}
	for _, vol := range spec.Volumes {
		if vol.Secret != nil {
			secretVolumes[vol.Name] = vol.Secret
		}
	}
	mounted := func(field, file string) {
		if file == "" {
			return
		}
		for _, m := range c.VolumeMounts {
			sv, ok := secretVolumes[m.Name]
			if !ok || filepath.Dir(file) != m.MountPath {
				continue
			}
			if !m.ReadOnly {
				t.Errorf("%s %s: volume %s is mounted writable", field, file, m.Name)
			}
			if len(sv.Items) > 0 && !slices.ContainsFunc(sv.Items, func(k corev1.KeyToPath) bool { return k.Path == filepath.Base(file) }) {
				t.Errorf("%s %s: Secret %s's volume projects %v, not %s", field, file, sv.SecretName, sv.Items, filepath.Base(file))
			}
			return
		}
		t.Errorf("%s %s: no Secret volume is mounted at %s", field, file, filepath.Dir(file))
	}
	for name, tl := range map[string]tls{"kafka.tls": f.Kafka.TLS, "sinks.clickhouse.tls": f.Sinks.ClickHouse.TLS} {
		mounted(name+".ca_file", tl.CAFile)
		mounted(name+".cert_file", tl.CertFile)
		mounted(name+".key_file", tl.KeyFile)
	}
	for field, env := range map[string]string{"kafka.sasl.password_env": f.Kafka.SASL.PasswordEnv, "sinks.clickhouse.password_env": f.Sinks.ClickHouse.PasswordEnv} {
		if env == "" {
			continue
		}
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == env })
		if i < 0 || c.Env[i].Value != "" || c.Env[i].ValueFrom == nil || c.Env[i].ValueFrom.SecretKeyRef == nil {
			t.Errorf("%s %s: want the container's env %s from a secretKeyRef", field, env, env)
		}
	}
}

// configFile is the fusebox.yaml of the chart's config ConfigMap.
func configFile(t *testing.T, objs []Object) string {
	t.Helper()
	for _, o := range objs {
		if cm, ok := o.Value.(*corev1.ConfigMap); ok && cm.Data["fusebox.yaml"] != "" {
			return cm.Data["fusebox.yaml"]
		}
	}
	t.Fatal("no ConfigMap with fusebox.yaml")
	return ""
}

// TestPrometheusRuleIsTheShippedRules: the PrometheusRule's groups are
// those of deploy/prometheus/fusebox.rules.yml, the file promtool checks
// and tests (deploy/rules_test.go), rule for rule; the dashboard ConfigMap
// holds deploy/grafana/fusebox.json byte for byte; the ServiceMonitor's
// job is "fusebox", the job the rules read.
func TestPrometheusRuleIsTheShippedRules(t *testing.T) {
	_, objs := rendered(t, Release{Name: "slo", Values: valueSets[1].files})
	pr := only[*monitoringv1.PrometheusRule](t, objs, "PrometheusRule")
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var want monitoringv1.PrometheusRuleSpec
	if err := yaml.UnmarshalStrict(b, &want); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	if len(want.Groups) == 0 || len(want.Groups[0].Rules) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	got, _ := json.Marshal(pr.Spec)
	wantJS, _ := json.Marshal(want)
	if !bytes.Equal(got, wantJS) {
		t.Errorf("PrometheusRule spec differs from %s:\n got %s\nwant %s", rulesFile, got, wantJS)
	}
	n := 0
	for _, g := range pr.Spec.Groups {
		n += len(g.Rules)
	}
	t.Logf("PrometheusRule: %d groups, %d rules, equal to %s", len(pr.Spec.Groups), n, rulesFile)

	dash, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var cm *corev1.ConfigMap
	for _, o := range objs {
		if c, ok := o.Value.(*corev1.ConfigMap); ok && c.Data["fusebox.json"] != "" {
			cm = c
		}
	}
	if cm == nil {
		t.Fatal("no dashboard ConfigMap")
	}
	if strings.TrimRight(cm.Data["fusebox.json"], "\n") != strings.TrimRight(string(dash), "\n") {
		t.Errorf("dashboard ConfigMap %s differs from %s", cm.Name, dashboardFile)
	}
	if cm.Labels["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v: want grafana_dashboard=1 for the Grafana sidecar", cm.Labels)
	}

	sm := only[*monitoringv1.ServiceMonitor](t, objs, "ServiceMonitor")
	svc := only[*corev1.Service](t, objs, "Service")
	if job := svc.Labels[sm.Spec.JobLabel]; job != "fusebox" {
		t.Errorf("ServiceMonitor job label %q = %q on the Service (release %q), want fusebox: FuseboxDown reads up{job=\"fusebox\"}", sm.Spec.JobLabel, job, "slo")
	}
}
