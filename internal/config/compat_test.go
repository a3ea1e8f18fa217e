package config

import (
	"strings"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestCompatWriteFormats: compat.write_formats: previous makes the router
// write keyed batches of version 2 and the workers checkpoints of version
// 4 (the formats the build before reads), without changing the config
// version or any state id (the first and second steps of a rolling
// upgrade must keep every SLO's state and verdict id); a bad value is an
// error naming the field and its line.
func TestCompatWriteFormats(t *testing.T) {
	cur, err := Parse("x.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	prev, err := Parse("x.yaml", []byte("compat:\n  write_formats: previous\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if cur.Compat.WriteFormats != WriteFormatsCurrent || cur.Compat.KeyedBatchVersion() != 0 || cur.Compat.CheckpointVersion() != 0 {
		t.Fatalf("default compat %+v: want current, writing the current formats", cur.Compat)
	}
	if prev.Compat.KeyedBatchVersion() != schemas.KeyedBatchVersion2 || prev.Compat.CheckpointVersion() != 4 {
		t.Fatalf("previous: keyed batch %d, checkpoint %d; want 2 and 4", prev.Compat.KeyedBatchVersion(), prev.Compat.CheckpointVersion())
	}
	if prev.Version != cur.Version {
		t.Fatalf("config version %s with compat, %s without: must not change", prev.Version, cur.Version)
	}
	wcCur, err := WorkerConfig(cur)
	if err != nil {
		t.Fatal(err)
	}
	wcPrev, err := WorkerConfig(prev)
	if err != nil {
		t.Fatal(err)
	}
	if wcPrev.CheckpointVersion != 4 || wcCur.CheckpointVersion != 0 {
		t.Fatalf("worker checkpoint versions %d (previous), %d (current); want 4 and 0", wcPrev.CheckpointVersion, wcCur.CheckpointVersion)
	}
	if wcPrev.BreakerStateID != wcCur.BreakerStateID || wcPrev.ConfigVersion != wcCur.ConfigVersion {
		t.Fatal("breaker state id or config version changed with compat")
	}
	for i := range wcCur.SLOs {
		if wcPrev.SLOs[i].StateID != wcCur.SLOs[i].StateID {
			t.Fatalf("SLO %s: state id changed with compat", wcCur.SLOs[i].Meta.SLO)
		}
	}

	_, err = Parse("x.yaml", []byte("compat:\n  write_formats: v2\n"+minimal))
	if err == nil || !strings.Contains(err.Error(), `x.yaml:2: compat.write_formats: must be current or previous, got "v2"`) {
		t.Fatalf("bad value: %v, want the field, its line and the choices", err)
	}
	_, err = Parse("x.yaml", []byte("compat:\n  write_format: previous\n"+minimal))
	if err == nil || !strings.Contains(err.Error(), "x.yaml:2: compat.write_format: unknown field (did you mean write_formats?)") {
		t.Fatalf("misspelt key: %v", err)
	}
}
