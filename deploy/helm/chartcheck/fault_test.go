package chartcheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyChart copies the chart directory into a temporary one, following
// its symbolic links (files/ links to deploy/prometheus and
// deploy/grafana), so that a test can break a copy.
func copyChart(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "fusebox")
	err := filepath.WalkDir(chartDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(chartDir, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path) // follows a link
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// plant replaces old by new in the chart copy's file (exactly once).
func plant(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), old); n != 1 {
		t.Fatalf("%s holds %q %d times, want once: the planted fault needs updating", file, old, n)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPlantedFaultsFail breaks a copy of the chart one way at a time and
// checks that the check fails, naming the object (kind, name, template)
// and the field; the unbroken copy passes.
func TestPlantedFaultsFail(t *testing.T) {
	secure := filepath.Join("ci", "secure-values.yaml")
	faults := []struct {
		name      string
		file      string
		old, new  string
		values    string // a values file of the copy, "" for the defaults
		wantInErr []string
	}{
		{"misspelt field", "templates/statefulset.yaml", "  serviceName:", "  serviceNam:", "",
			[]string{"StatefulSet fusebox (fusebox/templates/statefulset.yaml)", `unknown field "spec.serviceNam"`}},
		{"wrong type", "templates/statefulset.yaml", "replicas: {{ .Values.replicaCount }}", `replicas: "{{ .Values.replicaCount }}"`, "",
			[]string{"StatefulSet fusebox (fusebox/templates/statefulset.yaml)", "spec.replicas", "int32"}},
		{"field in the wrong case", "templates/statefulset.yaml", "containerPort:", "ContainerPort:", "",
			[]string{"StatefulSet fusebox", `unknown field "spec.template.spec.containers[0].ports[0].ContainerPort"`}},
		{"misplaced field", "templates/statefulset.yaml", "      serviceAccountName:", "      serviceAccount:\n        name:", "",
			[]string{"StatefulSet fusebox", "spec.template.spec.serviceAccount"}},
		{"bad quantity", "values.yaml", "    cpu: \"1\"", "    cpu: one", "",
			[]string{"StatefulSet fusebox", "spec.template.spec.containers[0].resources.requests"}},
		{"unknown apiVersion", "templates/pdb.yaml", "apiVersion: policy/v1", "apiVersion: policy/v2", "",
			[]string{"PodDisruptionBudget fusebox (fusebox/templates/pdb.yaml)", `apiVersion "policy/v2"`}},
		{"operator type: misspelt field", "templates/servicemonitor.yaml", "  jobLabel:", "  jobLabels:", secure,
			[]string{"ServiceMonitor fusebox (fusebox/templates/servicemonitor.yaml)", `unknown field "spec.jobLabels"`}},
		{"rule file: misspelt field", "files/fusebox.rules.yml", "        expr: up{job=\"fusebox\"} == 0", "        exp: up{job=\"fusebox\"} == 0", secure,
			[]string{"PrometheusRule fusebox", `unknown field "spec.groups[0].rules[0].exp"`}},
		{"volume mount without volume", "templates/statefulset.yaml", "        - name: tmp\n          emptyDir: {}", "        - name: scratch\n          emptyDir: {}", "",
			[]string{"StatefulSet fusebox", `volumeMounts[2].name "tmp" is not a volume of the pod`}},
		{"Service selects no pod", "templates/service.yaml", "    {{- include \"fusebox.selectorLabels\" . | nindent 4 }}", "    app: fusebox", "",
			[]string{"Service fusebox (fusebox/templates/service.yaml)", "selects no rendered pod template"}},
		{"broken template", "templates/service.yaml", "port: {{ .Values.port }}", "port: {{ .Values.port }", "",
			[]string{"templates/service.yaml", "helm lint"}},
	}
	clean := copyChart(t)
	for _, vs := range []string{"", secure} {
		r := Release{}
		if vs != "" {
			r.Values = []string{filepath.Join(clean, vs)}
		}
		if _, _, err := Check(clean, r); err != nil {
			t.Fatalf("the unbroken copy fails with values %q: %v", vs, err)
		}
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			dir := copyChart(t)
			plant(t, dir, f.file, f.old, f.new)
			r := Release{}
			if f.values != "" {
				r.Values = []string{filepath.Join(dir, f.values)}
			}
			_, _, err := Check(dir, r)
			if err == nil {
				t.Fatalf("%s: %q → %q passes the check", f.file, f.old, f.new)
			}
			for _, w := range f.wantInErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
			t.Logf("%s: %v", f.name, err)
		})
	}
}

// TestRenderRefuses: values fusebox cannot run with fail the render with
// an error naming the value.
func TestRenderRefuses(t *testing.T) {
	for _, c := range []struct {
		set  []string
		want string
	}{
		{[]string{"replicaCount=13"}, "replicaCount 13 > kafka.keyedPartitions 12"},
		{[]string{"replicaCount=25", "kafka.keyedPartitions=24"}, "replicaCount 25 > kafka.keyedPartitions 24"},
		{[]string{"replicaCount=4", "kafka.sourcePartitions=3"}, "replicaCount 4 > kafka.sourcePartitions 3"},
		{[]string{"kafka.sourcePartitions=-1"}, "sourcePartitions"},
		{[]string{"signing.existingSecret="}, "signing: fusebox refuses to start without a fuse signing key"},
		{[]string{"kafka.brokers=null"}, "kafka.brokers: set the seed brokers"},
		{[]string{"resources.limits.memory=2GB"}, `resources.limits.memory "2GB"`},
		{[]string{"kafka.sasl.mechanism=PLAIN"}, "kafka.sasl: a mechanism needs username and existingSecret"},
		{[]string{"clickhouse.enabled=true"}, "clickhouse.addr"},
		// values.schema.json: a misspelt or mistyped value is an error,
		// not silently ignored.
		{[]string{"replicas=3"}, "replicas"},
		{[]string{"kafka.keyedPartition=24"}, "keyedPartition"},
		{[]string{"replicaCount=two"}, "replicaCount"},
		{[]string{"kafka.brokers={kafka}"}, "/kafka/brokers/0"},
	} {
		_, err := Render(chartDir, Release{Set: c.set})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--set %v: error %v, want one saying %q", c.set, err, c.want)
		}
	}
	// IPv6 literals are brokers (and ClickHouse addresses) too; a bare
	// IPv6 address or one without a port is not.
	for _, c := range []struct {
		brokers string
		ok      bool
	}{
		{"['[::1]:9092', 'kafka-0.kafka:9092', '10.0.0.7:9092']", true},
		{"['[fe80::1%eth0]:9092', '[2001:db8::7]:9093']", true},
		{"['::1:9092']", false},
		{"['[::1]']", false},
		{"['[::1]:']", false},
	} {
		vals := filepath.Join(t.TempDir(), "values.yaml")
		y := "kafka:\n  brokers: " + c.brokers + "\nclickhouse:\n  enabled: true\n  addr: " + c.brokers + "\n"
		if err := os.WriteFile(vals, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Render(chartDir, Release{Values: []string{vals}})
		if c.ok && err != nil {
			t.Errorf("brokers %s: %v", c.brokers, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "/kafka/brokers/0") || !strings.Contains(err.Error(), "/clickhouse/addr/0")) {
			t.Errorf("brokers %s: error %v, want kafka.brokers[0] and clickhouse.addr[0] refused", c.brokers, err)
		}
	}
	// At the bounds it renders; sourcePartitions 0 (the default) is not
	// checked.
	for _, set := range [][]string{{"replicaCount=12"}, {"replicaCount=3", "kafka.sourcePartitions=3"}, {"replicaCount=12", "kafka.sourcePartitions=0"}} {
		if _, err := Render(chartDir, Release{Set: set}); err != nil {
			t.Errorf("--set %v: %v", set, err)
		}
	}
}
