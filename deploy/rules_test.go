package deploy

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/fusebox-dev/fusebox/internal/observe"
	"github.com/fusebox-dev/fusebox/internal/testharness"
)

// rulesDir holds the alert rules and their promtool unit tests.
const rulesDir = "prometheus"

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(testharness.Promtool(t, "alert rules"), args...)
	cmd.Dir = rulesDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// TestAlertRulesPromtool runs `promtool check rules` and `promtool test
// rules` on the shipped rules.
func TestAlertRulesPromtool(t *testing.T) {
	runPromtool(t, "check", "rules", "fusebox.rules.yml")
	runPromtool(t, "test", "rules", "fusebox.rules.test.yml")
}

// TestPrometheusConfig runs `promtool check config` on the compose
// Prometheus's config (which checks the rule files it loads too), and checks
// that it scrapes the fusebox service's metrics port as job "fusebox", the
// job FuseboxDown watches.
func TestPrometheusConfig(t *testing.T) {
	runPromtool(t, "check", "config", "prometheus.yml")
	var cfg struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName       string `yaml:"job_name"`
			StaticConfigs []struct {
				Targets []string `yaml:"targets"`
			} `yaml:"static_configs"`
		} `yaml:"scrape_configs"`
	}
	loadYAML(t, filepath.Join(rulesDir, "prometheus.yml"), &cfg)
	if !slices.Contains(cfg.RuleFiles, "fusebox.rules.yml") {
		t.Errorf("prometheus.yml rule_files %v, want fusebox.rules.yml", cfg.RuleFiles)
	}
	c := loadCompose(t)
	var port string
	for _, p := range c.Services["fusebox"].Ports {
		_, port, _ = strings.Cut(p, ":")
	}
	want := "fusebox:" + port
	found := false
	for _, sc := range cfg.ScrapeConfigs {
		for _, st := range sc.StaticConfigs {
			if sc.JobName == "fusebox" && slices.Contains(st.Targets, want) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("prometheus.yml has no job fusebox scraping %s (the fusebox service's port)", want)
	}
	p := c.Services["prometheus"]
	if !slices.Contains(p.Volumes, "./deploy/prometheus:/etc/prometheus:ro") {
		t.Errorf("prometheus service volumes %v do not mount deploy/prometheus at /etc/prometheus", p.Volumes)
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert string `yaml:"alert"`
			Expr  string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

type ruleTestFile struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		Name      string `yaml:"name"`
		AlertTest []struct {
			Alertname string `yaml:"alertname"`
			ExpAlerts []any  `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

func loadYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestAlertRulesTested checks that every alert has a promtool case where it
// fires and one where it is evaluated and must not (exp_alerts empty), so a
// rule added without a test fails here.
func TestAlertRulesTested(t *testing.T) {
	var rules ruleFile
	loadYAML(t, filepath.Join(rulesDir, "fusebox.rules.yml"), &rules)
	var tests ruleTestFile
	loadYAML(t, filepath.Join(rulesDir, "fusebox.rules.test.yml"), &tests)
	if !slices.Contains(tests.RuleFiles, "fusebox.rules.yml") {
		t.Errorf("fusebox.rules.test.yml rule_files %v do not load fusebox.rules.yml", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			n++
			if !fires[r.Alert] {
				t.Errorf("alert %s: no promtool case in which it fires", r.Alert)
			}
			if !quiet[r.Alert] {
				t.Errorf("alert %s: no promtool case in which it must stay quiet", r.Alert)
			}
		}
	}
	if n == 0 {
		t.Fatal("no alerts in fusebox.rules.yml")
	}
}

// metricName matches the fusebox metric names in a PromQL expression;
// labelMatcher a metric's selector and its label matchers.
var (
	metricName   = regexp.MustCompile(`\bfusebox_[a-z0-9_]+\b`)
	labelMatcher = regexp.MustCompile(`\b(fusebox_[a-z0-9_]+)\{([^}]*)\}`)
	matcherLabel = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!=|!~|=)`)
)

// TestAlertRulesLabelsExist checks that the labels the rules select on
// (metric{label="..."}) are labels of that metric family, for the fixed
// families internal/observe documents.
func TestAlertRulesLabelsExist(t *testing.T) {
	var rules ruleFile
	loadYAML(t, filepath.Join(rulesDir, "fusebox.rules.yml"), &rules)
	labels := map[string][]string{}
	for _, f := range observe.Families() {
		labels[f.Name] = f.Labels
	}
	checked := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range labelMatcher.FindAllStringSubmatch(r.Expr, -1) {
				known, ok := labels[m[1]]
				if !ok {
					continue // an extra sample's metric: its labels are not listed
				}
				for _, lm := range matcherLabel.FindAllStringSubmatch(m[2], -1) {
					checked++
					if !slices.Contains(known, lm[1]) {
						t.Errorf("alert %s selects %s{%s}: the metric's labels are %v", r.Alert, m[1], lm[1], known)
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no label matcher checked: the test reads nothing")
	}
}

// TestAlertRulesMetricsExist checks that every fusebox_* metric the rules
// read is still a string literal in the module's (non-test) Go source, so
// that renaming a metric without updating the rules fails here instead of
// leaving an alert that can never fire.
func TestAlertRulesMetricsExist(t *testing.T) {
	var rules ruleFile
	loadYAML(t, filepath.Join(rulesDir, "fusebox.rules.yml"), &rules)
	used := map[string][]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range metricName.FindAllString(r.Expr, -1) {
				if !slices.Contains(used[m], r.Alert) {
					used[m] = append(used[m], r.Alert)
				}
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("the rules name no fusebox_* metric")
	}
	var src [][]byte
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || d.Name() == "python") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src = append(src, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for m, alerts := range used {
		lit := []byte(`"` + m + `"`)
		found := slices.ContainsFunc(src, func(b []byte) bool { return bytes.Contains(b, lit) })
		if !found {
			t.Errorf("metric %s (alerts %v) is not a string literal in any non-test Go file: renamed or removed?", m, alerts)
		}
	}
}
