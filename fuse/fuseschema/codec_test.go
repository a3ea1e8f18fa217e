package fuseschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

var update = flag.Bool("update", false, "rewrite testdata/fuse_command.golden")

// sampleCommands are the commands of the golden file: a signed trip with
// strings that exercise every escape, an unsigned half-open throttle with a
// fraction in exponent form and empty arrays, and a close with the largest
// version.
func sampleCommands() []FuseCommand {
	return []FuseCommand{
		{
			Target:  Key{Tenant: "acme", Service: "chat", Model: "gpt-x", Variant: Wildcard},
			Action:  ActionDegrade,
			Level:   1,
			State:   StateOpen,
			Version: 1853070413660161, IssuedAtUnixNano: 1767225780000000000, ExpiresAtUnixNano: 1767226680000000000,
			Fallback: "small-model",
			Reasons: []Reason{
				{VerdictID: "7df3f31a542270fd0b8b05fa67947a57", Text: "degrade (3 of last 10, k=3): tail/chat-latency/duration_ms breach value=2350.5 threshold=2000"},
				{VerdictID: "deb1b0b7a240f33f5c9b09da0a21e465", Text: "quote \" backslash \\ <tag> & amp\ttab\nnl\rcr\bbs\ffeed\x01ctl\x1f\x7fdel é 日本 \u2028\u2029 😀"},
			},
			CorrelationIDs: []string{"bdf9cded8a3f5d41676757bb588e46d7", "slo:chat-latency"},
			KeyID:          "k2026-01",
			Signature:      "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0",
		},
		{
			Target:  Key{Tenant: "", Service: "search", Model: "m/with/slash", Variant: "canary"},
			Action:  ActionThrottle,
			Level:   1,
			State:   StateHalfOpen,
			Version: 1, IssuedAtUnixNano: -5, ExpiresAtUnixNano: 0,
			ThrottleFraction: 1e-7,
			Reasons:          []Reason{{VerdictID: "v", Text: ""}},
		},
		{
			Target:  Key{Tenant: Wildcard, Service: Wildcard, Model: Wildcard, Variant: Wildcard},
			Action:  ActionClose,
			State:   StateClosed,
			Version: math.MaxUint64, IssuedAtUnixNano: math.MaxInt64 - 1, ExpiresAtUnixNano: math.MaxInt64,
			ThrottleFraction: 0.30000000000000004,
			Reasons:          []Reason{{VerdictID: "a", Text: "x"}, {VerdictID: "b", Text: "y"}},
			CorrelationIDs:   []string{"inc"},
		},
	}
}

func TestFuseCommandGolden(t *testing.T) {
	var buf bytes.Buffer
	for i, c := range sampleCommands() {
		full, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		canon, err := c.CanonicalBytes()
		if err != nil {
			t.Fatalf("command %d: %v", i, err)
		}
		buf.Write(full)
		buf.WriteByte('\n')
		buf.Write(canon)
		buf.WriteByte('\n')
	}
	path := filepath.Join("testdata", "fuse_command.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("canonical form changed; if on purpose, bump the schema version or run -update.\ngot:\n%s\nwant:\n%s", buf.Bytes(), want)
	}
	// Every golden document also validates against the JSON Schema.
	schema := loadSchema(t)
	for i, line := range bytes.Split(bytes.TrimSpace(want), []byte("\n")) {
		if i%2 == 1 {
			continue // signing bytes: no signature member
		}
		var doc any
		d := json.NewDecoder(bytes.NewReader(line))
		d.UseNumber()
		if err := d.Decode(&doc); err != nil {
			t.Fatal(err)
		}
		if err := validateSchema(schema, doc, "$"); err != nil {
			t.Fatalf("golden line %d does not validate against the schema: %v", i, err)
		}
	}
}

func TestCanonicalBytesIsTheValueWithoutSignature(t *testing.T) {
	for i, c := range sampleCommands() {
		full, _ := c.MarshalJSON()
		canon, _ := c.CanonicalBytes()
		cut := []byte(`,"signature":` + string(appendCanonicalString(nil, c.Signature)) + `}`)
		if !bytes.HasSuffix(full, cut) {
			t.Fatalf("command %d: signature is not the last member", i)
		}
		if got := append(bytes.Clone(bytes.TrimSuffix(full, cut)), '}'); !bytes.Equal(got, canon) {
			t.Fatalf("command %d: value without signature\n%s\n!= canonical bytes\n%s", i, got, canon)
		}
		var p *FuseCommand = &c
		viaPtr, err := json.Marshal(p)
		if err != nil || !bytes.Equal(viaPtr, full) {
			t.Fatalf("command %d: json.Marshal(&c) differs from MarshalJSON: %v", i, err)
		}
	}
}

func TestCanonicalStringMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', '<', '>', '&', '\b', '\f', '\n', '\r', '\t', 0, 1, 0x1f, 0x7f, 0x80, 'é', '日', 0x2028, 0x2029, 0xfffd, 0x1f600, 0x10ffff}
	for i := 0; i < 20000; i++ {
		n := r.IntN(12)
		var sb strings.Builder
		for j := 0; j < n; j++ {
			if r.IntN(4) == 0 {
				sb.WriteRune(rune(r.IntN(0x110000)))
			} else {
				sb.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
		}
		s := sb.String()
		if !utf8.ValidString(s) {
			continue
		}
		want, _ := json.Marshal(s)
		if got := appendCanonicalString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, encoding/json %s", s, got, want)
		}
	}
}

func TestCanonicalFloatMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	fs := []float64{0, 1, 0.5, 0.1, 1e-6, 9.99999e-7, 1e-7, 5e-324, math.SmallestNonzeroFloat64, 0.30000000000000004, 1.0 / 3, 2.5e-10}
	for i := 0; i < 20000; i++ {
		fs = append(fs, r.Float64(), math.Ldexp(r.Float64(), -r.IntN(1000)))
	}
	for _, f := range fs {
		want, _ := json.Marshal(f)
		if got := appendCanonicalFloat(nil, f); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, encoding/json %s", f, got, want)
		}
	}
	if got := string(appendCanonicalFloat(nil, math.Copysign(0, -1))); got != "0" {
		t.Fatalf("-0 written %q, want 0", got)
	}
}

func TestFuseCommandRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	cmds := sampleCommands()
	for i := 0; i < 500; i++ {
		c := cmds[r.IntN(len(cmds))]
		c.Version = r.Uint64() | 1
		c.IssuedAtUnixNano = r.Int64N(math.MaxInt64 - 1)
		c.ExpiresAtUnixNano = c.IssuedAtUnixNano + 1 + r.Int64N(1e12)
		c.ThrottleFraction = r.Float64()
		c.Level = r.IntN(3)
		cmds = append(cmds, c)
	}
	for i, c := range cmds {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		got, err := DecodeFuseCommand(b)
		if err != nil {
			t.Fatalf("%d: decode %s: %v", i, b, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("%d: round trip\n%+v\n!=\n%+v", i, got, c)
		}
		var viaJSON FuseCommand
		if err := json.Unmarshal(b, &viaJSON); err != nil || !reflect.DeepEqual(viaJSON, c) {
			t.Fatalf("%d: json.Unmarshal: %v", i, err)
		}
	}
}

func TestDecodeFuseCommandRejects(t *testing.T) {
	good, _ := json.Marshal(sampleCommands()[0])
	g := string(good)
	rep := func(old, new string) string {
		if !strings.Contains(g, old) {
			t.Fatalf("test bug: %q not in %s", old, g)
		}
		return strings.Replace(g, old, new, 1)
	}
	cases := []struct {
		name, in string
		kind     error
		field    string
	}{
		{"not JSON", "{", ErrMalformed, "fuse_command"},
		{"array", "[]", ErrMalformed, "fuse_command"},
		{"trailing data", g + "{}", ErrMalformed, "fuse_command"},
		{"unknown member", rep(`"level":1`, `"level":1,"priority":3`), ErrMalformed, "priority"},
		{"member in other case", rep(`"level":1`, `"Level":1`), ErrMalformed, "Level"},
		{"repeated member", rep(`"level":1`, `"level":1,"level":2`), ErrMalformed, "level"},
		{"missing member", rep(`"fallback":"small-model",`, ``), ErrMalformed, "fallback"},
		{"unknown target member", rep(`"tenant":"acme"`, `"tenant":"acme","region":"eu"`), ErrMalformed, "target.region"},
		{"missing target member", rep(`"tenant":"acme",`, ``), ErrMalformed, "target.tenant"},
		{"unknown reason member", rep(`"text":"degrade`, `"score":1,"text":"degrade`), ErrMalformed, "reasons[0].score"},
		{"string level", rep(`"level":1`, `"level":"1"`), ErrMalformed, "level"},
		{"fractional level", rep(`"level":1`, `"level":1.5`), ErrMalformed, "level"},
		{"negative version", rep(`"version":1853070413660161`, `"version":-1`), ErrMalformed, "version"},
		{"version overflow", rep(`"version":1853070413660161`, `"version":18446744073709551616`), ErrMalformed, "version"},
		{"null reasons", rep(`"reasons":[`, `"reasons":null,"x":[`), ErrMalformed, "reasons"},
		{"wrong schema", rep(`fusebox.fuse_command.v1`, `fusebox.fuse_command.v2`), ErrInvalid, "schema"},
		{"unknown action", rep(`"action":"degrade"`, `"action":"explode"`), ErrInvalid, "action"},
		{"unknown state", rep(`"state":"open"`, `"state":"ajar"`), ErrInvalid, "state"},
		{"level too high", rep(`"level":1`, `"level":3`), ErrInvalid, "level"},
		{"version zero", rep(`"version":1853070413660161`, `"version":0`), ErrInvalid, "version"},
		{"expires before issued", rep(`"expires_at_unix_nano":1767226680000000000`, `"expires_at_unix_nano":1767225780000000000`), ErrInvalid, "expires_at_unix_nano"},
		{"fraction above 1", rep(`"throttle_fraction":0`, `"throttle_fraction":1.5`), ErrInvalid, "throttle_fraction"},
		{"degrade without fallback", rep(`"fallback":"small-model"`, `"fallback":""`), ErrInvalid, "fallback"},
		{"no reasons", rep(g[strings.Index(g, `"reasons":[`):strings.Index(g, `],"correlation_ids"`)+1], `"reasons":[]`), ErrInvalid, "reasons"},
		{"empty verdict id", rep(`"verdict_id":"7df3f31a542270fd0b8b05fa67947a57"`, `"verdict_id":""`), ErrInvalid, "reasons[0].verdict_id"},
		{"bad key id", rep(`"key_id":"k2026-01"`, `"key_id":"k 1"`), ErrInvalid, "key_id"},
		{"upper-case signature", rep(`"signature":"0f1e`, `"signature":"0F1E`), ErrInvalid, "signature"},
		{"signature without key id", rep(`"key_id":"k2026-01"`, `"key_id":""`), ErrInvalid, "signature"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeFuseCommand([]byte(tc.in))
			if err == nil {
				t.Fatalf("accepted %s", tc.in)
			}
			if !errors.Is(err, tc.kind) {
				t.Fatalf("error %v does not wrap %v", err, tc.kind)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("error %v: field %v, want %s", err, fe, tc.field)
			}
		})
	}
	if _, err := DecodeFuseCommand(append([]byte(g[:len(g)-1]), 0xff, '}')); !errors.Is(err, ErrMalformed) {
		t.Fatalf("invalid UTF-8: %v", err)
	}
	big := bytes.Repeat([]byte(" "), MaxFuseCommandBytes+1)
	if _, err := DecodeFuseCommand(big); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized: %v", err)
	}
	// Non-canonical spacing and member order still decode to the same command.
	var m map[string]json.RawMessage
	if err := json.Unmarshal(good, &m); err != nil {
		t.Fatal(err)
	}
	spaced, _ := json.MarshalIndent(m, "", "  ") // sorted keys, indented
	got, err := DecodeFuseCommand(spaced)
	if err != nil || !reflect.DeepEqual(got, sampleCommands()[0]) {
		t.Fatalf("re-ordered, indented form: %v", err)
	}
}

func TestMarshalRejectsInvalidCommands(t *testing.T) {
	c := sampleCommands()[0]
	c.Reasons[0].Text = "bad \xff utf-8"
	if _, err := json.Marshal(c); err == nil || !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid UTF-8 encoded: %v", err)
	}
	c = sampleCommands()[0]
	c.ThrottleFraction = math.NaN()
	if _, err := c.CanonicalBytes(); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NaN fraction: %v", err)
	}
	var zero FuseCommand
	if _, err := zero.MarshalJSON(); err == nil {
		t.Fatalf("zero command encoded")
	}
}
