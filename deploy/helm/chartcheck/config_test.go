package chartcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// repoRoot is the fusebox module, whose `fusebox config check` judges the
// config file the chart renders.
const repoRoot = "../../.."

var (
	fuseboxOnce sync.Once
	fuseboxBin  string
	fuseboxErr  error
)

// fusebox builds cmd/fusebox of this checkout once per test binary: the
// command the image runs, so the config is checked by the same code that
// reads it in the pod.
func fusebox(t *testing.T) string {
	t.Helper()
	fuseboxOnce.Do(func() {
		dir, err := os.MkdirTemp("", "chartcheck-fusebox-")
		if err != nil {
			fuseboxErr = err
			return
		}
		fuseboxBin = filepath.Join(dir, "fusebox")
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", fuseboxBin, "./cmd/fusebox")
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			fuseboxErr = err
			fuseboxBin = string(out)
		}
	})
	if fuseboxErr != nil {
		t.Fatalf("go build ./cmd/fusebox: %v\n%s", fuseboxErr, fuseboxBin)
	}
	return fuseboxBin
}

// configCheck runs `fusebox config check` on the rendered config file with
// the signing keys the pod would mount: the inline keys of a chart-made
// Secret, else a test key standing for the existing Secret's.
func configCheck(t *testing.T, objs []Object) (string, error) {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "fusebox.yaml")
	if err := os.WriteFile(cfg, []byte(configFile(t, objs)), 0o600); err != nil {
		t.Fatal(err)
	}
	keys := "existing-1:712cad36ca9923f25160956ac5fc9ce7c818199719f8b5d5f8a1326563f3fd26\n"
	for _, o := range objs {
		if s, ok := o.Value.(*corev1.Secret); ok {
			for _, v := range s.StringData {
				keys = v
			}
		}
	}
	keysFile := filepath.Join(dir, "keys")
	if err := os.WriteFile(keysFile, []byte(keys), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(fusebox(t), "config", "check", cfg, "--fuse-keys", keysFile).CombinedOutput()
	return string(out), err
}

// TestConfigAcceptedByFusebox: the config file of every value set passes
// `fusebox config check` (the SLO file loads, every processor accepts its
// section, the signing keys parse), and a chart whose config has a
// misspelt key does not.
func TestConfigAcceptedByFusebox(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			_, objs := rendered(t, Release{Values: vs.files})
			out, err := configCheck(t, objs)
			if err != nil {
				t.Fatalf("fusebox config check: %v\n%s\n%s", err, out, configFile(t, objs))
			}
			if !strings.HasPrefix(out, "ok: ") {
				t.Errorf("fusebox config check says:\n%s", out)
			}
			t.Logf("%s", out)
		})
	}
	t.Run("planted: misspelt config key", func(t *testing.T) {
		dir := copyChart(t)
		plant(t, dir, "templates/_helpers.tpl", `dict "keyed_partitions"`, `dict "keyed_partition"`)
		objs, manifest, err := Check(dir, Release{})
		if err != nil {
			t.Fatalf("%v\n%s", err, manifest)
		}
		out, err := configCheck(t, objs)
		if err == nil || !strings.Contains(out, "keyed_partition") || !strings.Contains(out, "unknown field") {
			t.Fatalf("fusebox config check of topics.keyed_partition: %v\n%s", err, out)
		}
		t.Logf("%s", out)
	})
}

// TestConfigPassesCompatThrough: the rolling-upgrade setting
// (docs/state-and-upgrades.md, "Rolling upgrades") is no chart-managed
// key: `--set config.compat.write_formats=previous` reaches the config
// file, which fusebox accepts; a wrong value is refused by fusebox,
// naming the field.
func TestConfigPassesCompatThrough(t *testing.T) {
	_, objs := rendered(t, Release{Set: []string{"config.compat.write_formats=previous"}})
	cfg := configFile(t, objs)
	if !strings.Contains(cfg, "compat:\n  write_formats: previous\n") {
		t.Fatalf("compat.write_formats not in the config file:\n%s", cfg)
	}
	if out, err := configCheck(t, objs); err != nil || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("fusebox config check: %v\n%s", err, out)
	}
	_, objs = rendered(t, Release{Set: []string{"config.compat.write_formats=older"}})
	if out, err := configCheck(t, objs); err == nil || !strings.Contains(out, "compat.write_formats: must be current or previous") {
		t.Fatalf("fusebox config check of write_formats=older: %v\n%s", err, out)
	}
}
