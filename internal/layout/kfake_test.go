package layout

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKfakeStartedOnlyByBroker: in this module only internal/broker starts
// a kfake cluster (the demo's embedded broker, `fusebox broker`, and every
// test's broker through internal/testharness), so that its settings —
// listen address, partitions, SASL users, ACLs — are one package's. The
// fuse module (fuse/, a Go module of its own) cannot import it and starts
// kfake in its own test helpers.
func TestKfakeStartedOnlyByBroker(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			// Another module (fuse, fuse/kafkago), or not code.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && rel != "." {
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && rel != "." || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Contains(b, []byte("kfake."+"NewCluster(")) { // split: not a match of this file
			return nil
		}
		seen++
		if !strings.HasPrefix(rel, "internal/broker/") {
			t.Errorf("%s starts kfake (kfake.NewCluster): start a broker through internal/broker (broker.Start, or broker.StartWithKfakeOpts)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Error("no kfake.NewCluster in the module: the check looks at nothing (was internal/broker renamed?)")
	}
}
