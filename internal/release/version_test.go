package main

import (
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.1.0", "v1.4.0", "v1.10.22", "v1.4.0-rc.1", "v0.0.1-test.1733112000.42"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("checkVersion(%q) = %v, want nil", v, err)
		}
	}
	for v, want := range map[string]string{
		"":             "no version given",
		"1.4.0":        "not a semantic version",
		"v1.4":         "not a semantic version",
		"v01.4.0":      "not a semantic version",
		"v1.4.0-":      "not a semantic version",
		"v1.4.0-rc.01": "leading zero",
		"v1.4.0+build": "build metadata",
		"v2.0.0":       "major version 2",
		"latest":       "not a semantic version",
	} {
		err := checkVersion(v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checkVersion(%q) = %v, want an error saying %q", v, err, want)
		}
	}
}
