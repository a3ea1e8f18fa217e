package main

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Every service of docker-compose.yml that runs the fusebox image passes
// flags this binary accepts: parsed by the real flag sets (a trailing -h
// stops before anything runs), so a renamed or removed flag fails here
// instead of crash-looping a container.
func TestComposeCommandsParse(t *testing.T) {
	b, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image   string   `yaml:"image"`
			Command []string `yaml:"command"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &compose); err != nil {
		t.Fatal(err)
	}
	n := 0
	for name, svc := range compose.Services {
		if svc.Image != "fusebox:dev" {
			continue
		}
		n++
		if len(svc.Command) == 0 {
			t.Errorf("service %s: no command", name)
			continue
		}
		if code, _, stderr := runCmd(t, append(svc.Command, "-h")...); code != exitOK {
			t.Errorf("service %s: command %q: exit %d: %s", name, svc.Command, code, stderr)
		}
	}
	if n < 2 {
		t.Fatalf("%d services run the fusebox image, want the daemon and the generator", n)
	}
}
