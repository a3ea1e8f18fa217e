package schemas

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// randCorrection returns a valid correction with Context sorted by key, as
// DecodeCorrection returns them.
func randCorrection(rng *rand.Rand) Correction {
	c := Correction{
		SchemaVersion: CorrectionSchemaVersion,
		EventID:       fmt.Sprintf("ev-%016x", rng.Uint64()),
		TimeUnixNano:  1_700_000_000_000_000_000 + rng.Int64N(1e15),
		Tenant:        pick(rng, genTenants),
		Kind:          pick(rng, CorrectionKinds),
	}
	if rng.IntN(3) > 0 {
		for i := range c.TraceID {
			c.TraceID[i] = byte(rng.UintN(256))
		}
	}
	if c.TraceID.IsZero() || rng.IntN(2) == 0 {
		c.SessionID = fmt.Sprintf("sess-%d-\"q\"-ü", rng.IntN(1000))
	}
	if rng.IntN(2) == 0 {
		c.Model = pick(rng, genModels)
		c.Variant = pick(rng, genVariants)
	}
	for i := range rng.IntN(4) {
		c.Context = append(c.Context, KV{Key: fmt.Sprintf("k%d", i), Value: pick(rng, []string{"web", "de-DE", "line\nbreak", ""})})
	}
	return c
}

func TestCorrectionRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for i := range 500 {
		c := randCorrection(rng)
		b, err := EncodeCorrection(c)
		if err != nil {
			t.Fatalf("%d: encode %+v: %v", i, c, err)
		}
		got, err := DecodeCorrection(b)
		if err != nil {
			t.Fatalf("%d: decode %s: %v", i, b, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("%d: round trip\n got  %+v\n want %+v\n json %s", i, got, c, b)
		}
	}
}

func TestDecodeCorrectionAcceptsSchemaForms(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		check      func(Correction) bool
	}{
		{"version written as 1.0", `{"schema_version":1.0,"event_id":"e","time":"2025-06-01T12:00:00Z","tenant":"","session_id":"s","kind":"reject"}`,
			func(c Correction) bool { return c.SchemaVersion == 1 && c.Tenant == "" }},
		{"offset time", `{"schema_version":1,"event_id":"e","time":"2025-06-01T14:00:00.5+02:00","tenant":"t","trace_id":"0af7651916cd43dd8448eb211c80319c","kind":"edit"}`,
			func(c Correction) bool {
				return c.TimeUnixNano == 1748779200500000000 && c.TraceID.String() == "0af7651916cd43dd8448eb211c80319c"
			}},
		{"escapes and context sorted", `{"context":{"b":"2","a":"\u00fc\n"},"schema_version":1,"event_id":"\ud83d\ude00","time":"2025-06-01T12:00:00Z","tenant":"t","session_id":"s","kind":"thumbs_down"}`,
			func(c Correction) bool {
				return c.EventID == "😀" && slices.Equal(c.Context, []KV{{"a", "ü\n"}, {"b", "2"}})
			}},
		{"empty context", `{"schema_version":1,"event_id":"e","time":"2025-06-01T12:00:00Z","tenant":"t","session_id":"s","kind":"escalate","context":{}}`,
			func(c Correction) bool { return c.Context == nil }},
		{"max lengths in code points", `{"schema_version":1,"event_id":"` + strings.Repeat("é", 256) + `","time":"2025-06-01T12:00:00Z","tenant":"t","session_id":"s","kind":"edit"}`,
			func(c Correction) bool { return len(c.EventID) == 512 }},
	} {
		c, err := DecodeCorrection([]byte(tc.json))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !tc.check(c) {
			t.Errorf("%s: decoded %+v", tc.name, c)
		}
	}
}

// corrBase is a valid correction, as a template for the rejection cases.
const corrBase = `{"schema_version":1,"event_id":"e1","time":"2025-06-01T12:00:00Z","tenant":"acme","trace_id":"0af7651916cd43dd8448eb211c80319c","kind":"reject"%s}`

func TestDecodeCorrectionRejects(t *testing.T) {
	withTrace := func(extra string) string { return fmt.Sprintf(corrBase, extra) }
	replace := func(old, new string) string { return strings.Replace(fmt.Sprintf(corrBase, ""), old, new, 1) }
	for _, tc := range []struct {
		name   string
		json   string
		kind   error
		fields []string // every FieldError expected, in order
	}{
		{"empty", ``, ErrMalformed, []string{"message"}},
		{"broken json", `{"schema_version":1,`, ErrMalformed, []string{"message"}},
		{"trailing garbage", withTrace("") + "x", ErrMalformed, []string{"message"}},
		{"invalid utf8", replace(`"acme"`, "\"ac\xffme\""), ErrMalformed, []string{"tenant"}},
		{"not an object", `[1,2]`, ErrInvalid, []string{"message"}},
		{"missing kind", replace(`,"kind":"reject"`, ``), ErrInvalid, []string{"kind"}},
		{"missing several", `{"schema_version":1,"session_id":"s"}`, ErrInvalid, []string{"event_id", "time", "tenant", "kind"}},
		{"unknown kind", replace(`"reject"`, `"meh"`), ErrInvalid, []string{"kind"}},
		{"bad time", replace(`"2025-06-01T12:00:00Z"`, `"yesterday"`), ErrInvalid, []string{"time"}},
		{"time without zone", replace(`"2025-06-01T12:00:00Z"`, `"2025-06-01T12:00:00"`), ErrInvalid, []string{"time"}},
		{"time out of range", replace(`"2025-06-01T12:00:00Z"`, `"2300-01-01T00:00:00Z"`), ErrInvalid, []string{"time"}},
		{"extra field", withTrace(`,"user":"bob"`), ErrInvalid, []string{"user"}},
		{"wrong type", replace(`"acme"`, `42`), ErrInvalid, []string{"tenant"}},
		{"null for a string", replace(`"acme"`, `null`), ErrInvalid, []string{"tenant"}},
		{"version 2", replace(`"schema_version":1`, `"schema_version":2`), ErrInvalid, []string{"schema_version"}},
		{"version as string", replace(`"schema_version":1`, `"schema_version":"1"`), ErrInvalid, []string{"schema_version"}},
		{"no join key", replace(`,"trace_id":"0af7651916cd43dd8448eb211c80319c"`, ``), ErrInvalid, []string{"trace_id"}},
		{"uppercase trace id", replace(`0af7651916cd43dd8448eb211c80319c`, `0AF7651916CD43DD8448EB211C80319C`), ErrInvalid, []string{"trace_id"}},
		{"short trace id", replace(`0af7651916cd43dd8448eb211c80319c`, `0af7`), ErrInvalid, []string{"trace_id"}},
		{"zero trace id", replace(`0af7651916cd43dd8448eb211c80319c`, `00000000000000000000000000000000`), ErrInvalid, []string{"trace_id"}},
		{"empty session id", withTrace(`,"session_id":""`), ErrInvalid, []string{"session_id"}},
		{"empty event id", replace(`"e1"`, `""`), ErrInvalid, []string{"event_id"}},
		{"long tenant", replace(`"acme"`, `"`+strings.Repeat("t", 257)+`"`), ErrInvalid, []string{"tenant"}},
		{"duplicate property", withTrace(`,"kind":"edit"`), ErrInvalid, []string{"kind"}},
		{"context not strings", withTrace(`,"context":{"a":1,"b":"x"}`), ErrInvalid, []string{"context"}},
		{"context too many", withTrace(`,"context":{` + corrManyProps(33) + `}`), ErrInvalid, []string{"context"}},
		{"context long value", withTrace(`,"context":{"a":"` + strings.Repeat("v", 1025) + `"}`), ErrInvalid, []string{"context"}},
		{"context duplicate key", withTrace(`,"context":{"a":"1","a":"2"}`), ErrInvalid, []string{"context"}},
		{"several at once", `{"schema_version":1,"event_id":"e","time":"now","tenant":"t","kind":"nope","extra":true}`, ErrInvalid,
			[]string{"time", "extra", "kind", "trace_id"}},
	} {
		_, err := DecodeCorrection([]byte(tc.json))
		if !errors.Is(err, tc.kind) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.kind)
			continue
		}
		var got []string
		corrCollectFields(err, &got)
		if !slices.Equal(got, tc.fields) {
			t.Errorf("%s: fields %v, want %v (err: %v)", tc.name, got, tc.fields, err)
		}
	}
}

func corrManyProps(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`"k%d":"v"`, i))
	}
	return strings.Join(parts, ",")
}

// corrCollectFields lists the Field of every FieldError in err's tree.
func corrCollectFields(err error, out *[]string) {
	if fe, ok := err.(*FieldError); ok {
		*out = append(*out, fe.Field)
		return
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			corrCollectFields(e, out)
		}
	case interface{ Unwrap() error }:
		corrCollectFields(u.Unwrap(), out)
	}
}

func TestEncodeCorrectionRefusesInvalid(t *testing.T) {
	good := Correction{EventID: "e", TimeUnixNano: 1, Tenant: "t", SessionID: "s", Kind: KindReject}
	if _, err := EncodeCorrection(good); err != nil {
		t.Fatalf("valid correction: %v", err)
	}
	for _, tc := range []struct {
		name  string
		c     func(*Correction)
		field string
	}{
		{"no join key", func(c *Correction) { c.SessionID = "" }, "trace_id"},
		{"unknown kind", func(c *Correction) { c.Kind = "meh" }, "kind"},
		{"empty event id", func(c *Correction) { c.EventID = "" }, "event_id"},
		{"version", func(c *Correction) { c.SchemaVersion = 3 }, "schema_version"},
		{"bad utf8", func(c *Correction) { c.Model = "\xff" }, "model"},
		{"duplicate context", func(c *Correction) { c.Context = []KV{{"a", "1"}, {"a", "2"}} }, "context"},
	} {
		c := good
		tc.c(&c)
		_, err := EncodeCorrection(c)
		var fe *FieldError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: err = %v, want ErrInvalid on %s", tc.name, err, tc.field)
		}
	}
}
