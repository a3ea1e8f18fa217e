package corrections

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/fusebox-dev/fusebox/processors"
	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/processors/snapcodec"
	"github.com/fusebox-dev/fusebox/schemas"
)

// TestUnmatchedSpansClaimTheirCorrections: a span outside the SLO's match
// (Hooks.ObserveUnmatched) takes the corrections that name it, by trace id
// or as the latest span of a session, and they count nowhere in the SLO;
// the SLO's own spans keep theirs. Its snapshot (version 5: the keys
// outside the match) restores to the same verdicts and attributions, and
// a state without such keys is still written as version 4.
func TestUnmatchedSpansClaimTheirCorrections(t *testing.T) {
	outside := schemas.Key{Tenant: "acme", Service: "chat-api", Model: "other-model", Variant: "baseline"}
	f := newFixture(t)
	unmatched := func(key schemas.Key, end int64, trace byte, session string) {
		s := proctest.NewSpan(f.r, key, "chat", end, 100)
		s.TraceID = schemas.TraceID{trace}
		s.SessionID = session
		f.p.Hooks().ObserveUnmatched(s.Key, &s)
	}
	f.span(keyBase, t0+10*sec, 1, "S")
	unmatched(outside, t0+20*sec, 2, "S")
	f.correct("acme", t0+30*sec, 2, "S", schemas.KindReject) // trace 2: the outside span, not keyBase's by the session
	f.span(keyBase, t0+5*sec, 3, "T")
	unmatched(outside, t0+15*sec, 4, "T")
	f.correct("acme", t0+31*sec, 0, "T", schemas.KindEdit) // session T's latest span is outside
	f.span(keyBase, t0+6*sec, 5, "U")
	f.correct("acme", t0+32*sec, 0, "U", schemas.KindRephrase) // session U has only keyBase's span: counted

	if b, _ := mustNew(t, f.p.cfg).MarshalBinary(); !isFormat(b, snapshotFormatV4) {
		t.Fatal("a state without keys outside the match is not written as version 4")
	}
	snap, err := f.p.MarshalBinary()
	if err != nil || !isFormat(snap, snapshotFormat) || snapshotFormat.Version != 5 {
		t.Fatalf("a state with keys outside the match: not written as version 5 (err %v)", err)
	}
	restored := mustNew(t, f.p.cfg)
	if err := restored.UnmarshalBinary(snap); err != nil {
		t.Fatalf("restore of a version-5 snapshot: %v", err)
	}
	if again, _ := restored.MarshalBinary(); !bytes.Equal(again, snap) {
		t.Fatal("restored state snapshots differently")
	}
	newP := func() processors.Processor { return mustNew(t, f.p.cfg) }
	proctest.RejectsDamage(t, newP, snap, ErrCorrupt)

	var out proctest.Collector
	f.p.Evaluate(t0+minute, &f.out)
	restored.Evaluate(t0+minute, &out)
	if !reflect.DeepEqual(f.out.Verdicts, out.Verdicts) {
		t.Fatalf("restored verdicts differ:\n%s\nwant\n%s", proctest.Lines(out.Verdicts, t0), proctest.Lines(f.out.Verdicts, t0))
	}
	v := find(f.out.Verdicts, keyBase, MetricRate)
	if v == nil || detail(v, "corrections") != 1 || detail(v, "rephrase") != 1 || detail(v, "responses") != 3 {
		t.Fatalf("keyBase should count only session U's correction of its 3 responses:\n%s", proctest.Lines(f.out.Verdicts, t0))
	}
	if v := find(f.out.Verdicts, outside, MetricRate); v != nil {
		t.Fatalf("a key outside the match was judged: %+v", v)
	}
	joined, rj := f.p.TakeJoined(), restored.TakeJoined()
	if !reflect.DeepEqual(joined, rj) {
		t.Fatalf("restored attributions %v, want %v", rj, joined)
	}
	by := map[schemas.Key]int{}
	for _, j := range joined {
		by[j.Key]++
	}
	if by[outside] != 2 || by[keyBase] != 1 || len(joined) != 3 {
		t.Fatalf("attributions %v: want 2 to the outside key (for the rollups), 1 to keyBase", by)
	}
	// Past the join window the outside spans are evicted and their key
	// forgotten: the state is empty again and written as version 4.
	for m := int64(2); m <= 12; m++ {
		f.p.Evaluate(t0+m*minute, &f.out)
	}
	if n := len(f.p.index.foreign); n != 0 {
		t.Fatalf("%d keys outside the match kept after their spans were evicted", n)
	}
	if b, _ := f.p.MarshalBinary(); !isFormat(b, snapshotFormatV4) {
		t.Fatal("an evicted state is not written as version 4 again")
	}
}

// isFormat reports whether b starts with f's header.
func isFormat(b []byte, f snapcodec.Format) bool {
	d := snapcodec.NewDecoder(b)
	d.Header(f.Name, f.Version)
	return d.Err() == nil
}
