package corrections

import (
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/processors/internal/proctest"
	"github.com/fusebox-dev/fusebox/schemas"
)

// joinState feeds p spans of two tenants that share trace, session and
// response ids across tenants, and corrections that join by each of the
// three lists (and one that joins nothing), without evaluating: the state
// of testdata/corrections_v3.snap, written by the build before
// fingerprints (version 3 snapshots) from this same function.
func joinState(p *Processor) {
	a := schemas.Key{Tenant: "acme", Service: "bot", Model: "m", Variant: "b"}
	o := schemas.Key{Tenant: "other", Service: "bot", Model: "m", Variant: "b"}
	t0 := int64(1000) * int64(time.Minute)
	var spans []schemas.Span
	for i := range 12 {
		k := a
		if i%3 == 2 {
			k = o
		}
		s := schemas.Span{Key: k, StartUnixNano: t0 + int64(i)*1e9, EndUnixNano: t0 + int64(i)*1e9 + 5e8}
		switch i % 4 {
		case 0:
			s.TraceID = schemas.TraceID{byte(i / 4), 1}
		case 1:
			s.SessionID = "sess-" + string(rune('a'+i%2))
		case 2:
			s.ResponseID = "resp-1"
		case 3:
			s.TraceID, s.SessionID, s.ResponseID = schemas.TraceID{9}, "sess-b", "resp-2"
		}
		s.SpanID = schemas.SpanID{byte(i)}
		spans = append(spans, s)
	}
	proctest.ObserveAll(p, spans)
	for i, c := range []schemas.Correction{
		{EventID: "c-trace", Tenant: "acme", TraceID: schemas.TraceID{1, 1}},
		{EventID: "c-trace-other", Tenant: "other", TraceID: schemas.TraceID{9}},
		{EventID: "c-session", Tenant: "acme", SessionID: "sess-b"},
		{EventID: "c-session-again", Tenant: "acme", SessionID: "sess-b"},
		{EventID: "c-resp", Tenant: "other", ResponseID: "resp-1"},
		{EventID: "c-resp-acme", Tenant: "acme", ResponseID: "resp-1"},
		{EventID: "c-none", Tenant: "acme", SessionID: "sess-z", Model: "m"},
		{EventID: "c-late", Tenant: "acme", TraceID: schemas.TraceID{2, 1}}, // after the evaluation below: stays pending
	} {
		c.SchemaVersion, c.Kind, c.TimeUnixNano = 1, schemas.KindThumbsDown, t0+int64(20+i)*1e9
		if c.EventID == "c-late" {
			c.TimeUnixNano = t0 + int64(90*time.Second)
		}
		p.ObserveCorrection(&c)
	}
}

// TestReadsVersion3Snapshot restores a snapshot of the build whose index
// entries held the ids themselves (version 3) and evaluates it: the same
// verdicts and attributions as the state built live with fingerprints, and
// the restored state snapshots as the live one does.
func TestReadsVersion3Snapshot(t *testing.T) {
	b, err := os.ReadFile("testdata/corrections_v3.snap")
	if err != nil {
		t.Fatal(err)
	}
	old := mustNew(t, responseCfg())
	if err := old.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	live := mustNew(t, responseCfg())
	joinState(live)
	if n, _, pend := old.IndexStats(); n != 12 || pend != 8 {
		t.Fatalf("indexed %d, pending %d; want 12 and 8", n, pend)
	}
	sa, _ := old.MarshalBinary()
	sb, _ := live.MarshalBinary()
	if string(sa) != string(sb) {
		t.Fatal("restored version 3 state snapshots differently from the live state")
	}
	t0 := int64(1000) * int64(time.Minute)
	var outOld, outLive proctest.Collector
	old.Evaluate(t0+int64(time.Minute), &outOld)
	live.Evaluate(t0+int64(time.Minute), &outLive)
	jo, jl := old.TakeJoined(), live.TakeJoined()
	if !reflect.DeepEqual(outOld.Verdicts, outLive.Verdicts) || !reflect.DeepEqual(jo, jl) {
		t.Fatalf("restored:\n%+v\n%+v\nlive:\n%+v\n%+v", outOld.Verdicts, jo, outLive.Verdicts, jl)
	}
	// The join rule (by key of the span joined): acme's trace {1,1} span
	// (not other's), other's trace {9} span (not acme's two), acme's
	// latest sess-b span (then a repeat, not attributed again), other's
	// resp-1 span, acme's latest resp-1 span; c-none unjoined.
	a := schemas.Key{Tenant: "acme", Service: "bot", Model: "m", Variant: "b"}
	o := schemas.Key{Tenant: "other", Service: "bot", Model: "m", Variant: "b"}
	want := map[schemas.Key]int{a: 3, o: 2, {Tenant: "acme", Model: "m"}: 1}
	got := map[schemas.Key]int{}
	for _, j := range jl {
		got[j.Key]++
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("attributions %v, want %v", got, want)
	}
}

// TestFingerprintsSeparate: the fingerprint depends on the tenant, the
// domain and every byte of the id (lengths 0–40, each byte flipped), is
// never 0 for an id, and 0 for none.
func TestFingerprintsSeparate(t *testing.T) {
	seen := map[uint64]string{}
	add := func(h uint64, what string) {
		t.Helper()
		if h == 0 {
			t.Fatalf("%s: fingerprint 0", what)
		}
		if prev, dup := seen[h]; dup {
			t.Fatalf("%s and %s: same fingerprint %x", prev, what, h)
		}
		seen[h] = what
	}
	id := []byte("0123456789abcdefghijklmnopqrstuvwxyzABCD")
	for _, tenant := range []string{"", "a", "acme", "acme2"} {
		seed := tenantSeed(tenant)
		for _, dom := range []byte{fpSession, fpResp} {
			for n := 1; n <= len(id); n++ {
				add(fingerprint(seed, dom, string(id[:n])), tenant+"/"+string(dom)+"/"+string(id[:n]))
				for i := range n {
					v := append([]byte(nil), id[:n]...)
					v[i] ^= 0x80
					add(fingerprint(seed, dom, string(v)), tenant+"/"+string(dom)+"/flip"+string(rune('0'+i%10))+string(id[:n]))
				}
			}
		}
		add(traceFingerprint(seed, schemas.TraceID{1}), tenant+"/trace1")
		add(traceFingerprint(seed, schemas.TraceID{15: 1}), tenant+"/trace15")
		if fingerprint(seed, fpSession, "") != 0 || traceFingerprint(seed, schemas.TraceID{}) != 0 {
			t.Fatal("no id must have fingerprint 0")
		}
	}
	// A block equal to the mixing constant wiped the state in the first
	// build: these two collided there.
	var m [8]byte
	for i := range m {
		m[i] = byte(uint64(0xa0761d6478bd642f) >> (8 * i))
	}
	if fingerprint(tenantSeed("acme"), fpSession, "AAAAAAAA"+string(m[:])+"tail") == fingerprint(tenantSeed("other"), fpResp, "BBBBBBBBCCCCCCCC"+string(m[:])+"tail") {
		t.Fatal("a block equal to the mixing constant cancels the prefix")
	}
}

// TestJoinComparesTenantExactly: a correction of tenant evil whose trace
// fingerprint equals a span of acme's (forced here: the index is given
// acme's fingerprint under evil's name) joins nothing, and a trace id
// crafted against the first build's linear mixing (X = Y with X[:8] xored
// by both tenants' seeds) is not attributed to acme either.
func TestJoinComparesTenantExactly(t *testing.T) {
	p := mustNew(t, responseCfg())
	a := schemas.Key{Tenant: "acme", Service: "bot", Model: "m", Variant: "b"}
	t0 := int64(1000) * int64(time.Minute)
	y := schemas.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9}
	proctest.ObserveAll(p, []schemas.Span{{Key: a, TraceID: y, StartUnixNano: t0, EndUnixNano: t0 + 1e9}})
	fp := traceFingerprint(tenantSeed("acme"), y)
	if j := p.index.find("evil", fp, 0, 0, t0+2e9, p.join); j >= 0 {
		t.Fatalf("evil's correction with acme's fingerprint joined entry %d", j)
	}
	if j := p.index.find("acme", fp, 0, 0, t0+2e9, p.join); j < 0 {
		t.Fatal("acme's own correction joins nothing")
	}
	x := y
	sa, se := tenantSeed("acme"), tenantSeed("evil")
	for i := range 8 {
		x[i] ^= byte((sa ^ se) >> (8 * i))
	}
	c := schemas.Correction{SchemaVersion: 1, EventID: "e", Tenant: "evil", TraceID: x, Kind: schemas.KindThumbsDown, TimeUnixNano: t0 + 2e9}
	p.ObserveCorrection(&c)
	var out proctest.Collector
	p.Evaluate(t0+int64(time.Minute), &out)
	for _, j := range p.TakeJoined() {
		if j.Key.Tenant != "evil" {
			t.Fatalf("evil's correction attributed to %v", j.Key)
		}
	}
}
