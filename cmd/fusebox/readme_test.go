package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestREADMEDocumentsEveryFlag: the README's "Command line" section has,
// per command (and config subcommand, bench study), a table whose flags
// are exactly those the command's -h lists, spelt --flag; and every
// `fusebox CMD --flag` the README writes elsewhere is a flag CMD has.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	flagLine := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	rowFlag := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)")
	all := map[string][]string{}
	for _, cmd := range helpTargets() {
		name := strings.Join(cmd, " ")
		_, stdout, _ := runCmd(t, append(slices.Clone(cmd), "-h")...)
		for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
			all[name] = append(all[name], m[1])
		}
		if len(all[name]) == 0 {
			continue // config, bench: their subcommands have the flags
		}
		// The command's table: from its heading, the usage line of its
		// -h, to the next heading.
		usage := strings.TrimPrefix(strings.SplitN(stdout, "\n", 2)[0], "Usage: ")
		head := "\n#### `" + usage + "`\n"
		i := strings.Index(readme, head)
		if i < 0 {
			t.Errorf("the README has no heading %q in its command-line reference", strings.TrimSpace(head))
			continue
		}
		loc := []int{i, i + len(head)}
		sec := readme[loc[1]:]
		if i := strings.Index(sec, "\n#"); i >= 0 {
			sec = sec[:i]
		}
		var documented []string
		for _, m := range rowFlag.FindAllStringSubmatch(sec, -1) {
			documented = append(documented, m[1])
		}
		for _, f := range all[name] {
			if !slices.Contains(documented, f) {
				t.Errorf("fusebox %s --%s is not in its README table", name, f)
			}
		}
		for _, f := range documented {
			if !slices.Contains(all[name], f) {
				t.Errorf("the README's table of fusebox %s lists --%s, which it does not have", name, f)
			}
		}
	}
	// The README's invocations name real flags.
	inv := regexp.MustCompile("fusebox (run|demo|gen|calibrate|report|migrate|broker|config check|config diff|bench tail-accuracy|bench false-trips)((?: [^`\\n]*)?)")
	for _, m := range inv.FindAllStringSubmatch(readme, -1) {
		for _, f := range regexp.MustCompile(`(?:^| )--([a-z0-9-]+)`).FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(all[m[1]], f[1]) {
				t.Errorf("the README writes %q: fusebox %s has no --%s", strings.TrimSpace(m[0]), m[1], f[1])
			}
		}
	}
}
