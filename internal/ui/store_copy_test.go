package ui

import (
	"context"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/schemas"
)

// TestStoreKeepsItsOwnCopy: what the store holds of a verdict shares
// nothing with the verdict written: a producer that edits or reuses its
// verdict's details or evidence afterwards (the slices and the Evidence
// struct) leaves the store's history as it was written.
func TestStoreKeepsItsOwnCopy(t *testing.T) {
	s := newTestStore(t, Config{})
	v := tailVerdict(kA, 10*minute, 9000, schemas.StatusBreach)
	v.Evidence.Current = schemas.ECDFPoints([]float64{0.1, 0.2, 0.3}, 64)
	v.Evidence.Reference = schemas.ECDFPoints([]float64{0.4, 0.5}, 64)
	out := schemas.Output{Verdicts: []schemas.Verdict{v}}
	if err := s.Write(context.Background(), out); err != nil {
		t.Fatal(err)
	}
	want, ok := s.Key(kA)
	if !ok || want.Series[0].Latest.Evid == nil {
		t.Fatalf("store holds %+v", want)
	}
	// The producer reuses its buffers.
	e := out.Verdicts[0].Evidence
	for _, p := range []*schemas.Points{&e.Current, &e.Reference, &e.Exceedances} {
		for i := range p.X {
			p.X[i], p.P[i] = -1, -1
		}
	}
	e.KSAt = -1
	out.Verdicts[0].Details[0].Value = -1
	got, _ := s.Key(kA)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the store's verdict changed with the producer's:\n got %+v\nwant %+v", got.Series[0].Latest, want.Series[0].Latest)
	}
}
