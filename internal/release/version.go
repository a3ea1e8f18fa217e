package main

import (
	"fmt"
	"regexp"
	"strings"
)

// semver is a release version as Go modules take it: vMAJOR.MINOR.PATCH
// with an optional pre-release (v1.4.0-rc.1), no build metadata.
var semver = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// checkVersion returns an error naming what is wrong with version, nil
// for a version the three modules can be tagged with. Major versions 2
// and up are refused: the module paths would need a /vN suffix, which
// they do not have.
func checkVersion(version string) error {
	if version == "" {
		return fmt.Errorf("no version given: want vX.Y.Z (semantic version, e.g. v1.4.0)")
	}
	if strings.Contains(version, "+") {
		return fmt.Errorf("version %q: build metadata (+...) is not allowed in Go module versions; want vX.Y.Z", version)
	}
	m := semver.FindStringSubmatch(version)
	if m == nil {
		return fmt.Errorf("version %q is not a semantic version vX.Y.Z (e.g. v1.4.0, v1.4.0-rc.1; leading v, no leading zeros)", version)
	}
	if pre := strings.TrimPrefix(m[4], "-"); pre != "" {
		for _, id := range strings.Split(pre, ".") {
			if len(id) > 1 && id[0] == '0' && strings.Trim(id, "0123456789") == "" {
				return fmt.Errorf("version %q: numeric pre-release identifier %q has a leading zero", version, id)
			}
		}
	}
	if m[1] != "0" && m[1] != "1" {
		return fmt.Errorf("version %q: major version %s needs module paths ending in /v%s, which fusebox's modules do not have; want v0.x.y or v1.x.y", version, m[1], m[1])
	}
	return nil
}
