package fuse

// The shared test vectors (testdata/vectors/*.json): what package fuse
// does, byte for byte, written down once so that clients in other
// languages (clients/python) can be held to the same contract. This file
// builds them from the real package; vectors_test.go checks that the
// committed files are exactly what it builds (go test -run TestVectors
// -update rewrites them) and replays their inputs through the package.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
)

// vectorT0 is the vectors' wall-clock origin.
var vectorT0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func vns(d time.Duration) int64 { return vectorT0.Add(d).UnixNano() }

// vectorSecret is a vector key's secret: 32 bytes derived from its id and
// a generation (the same id with another generation is another secret).
func vectorSecret(id string, gen int) []byte {
	s := sha256.Sum256([]byte("fusebox vector key " + id + " generation " + string(rune('0'+gen))))
	return s[:]
}

type vecKey struct {
	ID        string `json:"id"`
	SecretHex string `json:"secret_hex"`
	// NotAfter is RFC 3339, "" for never.
	NotAfter string `json:"not_after"`
	// NotAfterUnixNano is NotAfter in Unix ns (0 for never).
	NotAfterUnixNano int64 `json:"not_after_unix_nano"`
}

type vecKeyring struct {
	Name string `json:"name"`
	// Text is the keyring in the key-file format (ParseKeyring).
	Text   string   `json:"text"`
	Active string   `json:"active"`
	Keys   []vecKey `json:"keys"`
}

type vecKeyringError struct {
	Name  string `json:"name"`
	Text  string `json:"text"`
	Error string `json:"error"`
}

type keyringsFile struct {
	Description string            `json:"description"`
	Keyrings    []vecKeyring      `json:"keyrings"`
	ParseErrors []vecKeyringError `json:"parse_errors"`
}

type vecCommand struct {
	Name string `json:"name"`
	// ValueHex is the record value as fusebox writes it (or, for
	// non-canonical cases, as someone else might).
	ValueHex string `json:"value_hex"`
	// Command is the decoded command in its canonical JSON form.
	Command json.RawMessage `json:"command"`
	// CanonicalHex is CanonicalBytes of the decoded command.
	CanonicalHex string `json:"canonical_hex"`
	// EncodedHex is the canonical encoding with the signature member
	// (equal to ValueHex when the value is canonical).
	EncodedHex string `json:"encoded_hex"`
	// Keyring signed it ("" when unsigned); SignatureHex is the signature.
	Keyring   string `json:"keyring"`
	Signature string `json:"signature"`
	// RecordKey is the record key fusebox uses: Target.String().
	RecordKey string `json:"record_key"`
}

type vecDecodeError struct {
	Name     string `json:"name"`
	ValueHex string `json:"value_hex"`
	// Kind is malformed, invalid or too_large; Field the FieldError's field.
	Kind  string `json:"kind"`
	Field string `json:"field"`
	Error string `json:"error"`
}

type vecEncodeError struct {
	Name string `json:"name"`
	// Command is a JSON object of the command's fields (canonical member
	// names) that Validate refuses.
	Command json.RawMessage `json:"command"`
	Field   string          `json:"field"`
	Error   string          `json:"error"`
}

type codecFile struct {
	Description  string           `json:"description"`
	Commands     []vecCommand     `json:"commands"`
	DecodeErrors []vecDecodeError `json:"decode_errors"`
	EncodeErrors []vecEncodeError `json:"encode_errors"`
}

type vecVerify struct {
	Name        string `json:"name"`
	ValueHex    string `json:"value_hex"`
	Keyring     string `json:"keyring"`
	NowUnixNano int64  `json:"now_unix_nano"`
	// Result is "ok" or the RejectReason.
	Result string `json:"result"`
	Error  string `json:"error"`
}

type verifyFile struct {
	Description string      `json:"description"`
	Cases       []vecVerify `json:"cases"`
}

type vecDecision struct {
	Outcome  string  `json:"outcome"`
	Fallback string  `json:"fallback"`
	Fraction float64 `json:"fraction"`
	Probe    bool    `json:"probe"`
	Matched  bool    `json:"matched"`
	// Target and Version of the deciding command ("" and 0 when none).
	Target  string `json:"target"`
	Version uint64 `json:"version"`
	// Admit is [u, Admit(u)] for a few samples u.
	Admit [][2]any `json:"admit"`
}

type vecStep struct {
	// Op is "record" (a record read from the topic) or "decide".
	Op          string `json:"op"`
	NowUnixNano int64  `json:"now_unix_nano"`
	Comment     string `json:"comment,omitempty"`
	// record: the value (null: a tombstone) and the result, "applied" or
	// the RejectReason.
	ValueHex *string `json:"value_hex,omitempty"`
	Result   string  `json:"result,omitempty"`
	// decide: the request key and the decision.
	Key      *fuseschema.Key `json:"key,omitempty"`
	Decision *vecDecision    `json:"decision,omitempty"`
}

type vecSequence struct {
	Name string `json:"name"`
	// Keyring is the client's keyring ("" none); Insecure is
	// WithInsecureUnsigned.
	Keyring  string    `json:"keyring"`
	Insecure bool      `json:"insecure"`
	Steps    []vecStep `json:"steps"`
}

type clientFile struct {
	Description string        `json:"description"`
	Sequences   []vecSequence `json:"sequences"`
}

// vectorKeyrings are the keyrings every other vector names.
func vectorKeyrings() []vecKeyring {
	retire := vectorT0.Add(2 * time.Hour)
	mk := func(id string, gen int, notAfter time.Time) vecKey {
		k := vecKey{ID: id, SecretHex: hex.EncodeToString(vectorSecret(id, gen))}
		if !notAfter.IsZero() {
			k.NotAfter, k.NotAfterUnixNano = notAfter.UTC().Format(time.RFC3339), notAfter.UnixNano()
		}
		return k
	}
	rings := []vecKeyring{
		{Name: "single", Active: "k1", Keys: []vecKey{mk("k1", 0, time.Time{})}},
		// Rotation: the old key still verifies until its not-after, the
		// new one signs.
		{Name: "rotation", Active: "k2026b", Keys: []vecKey{mk("k2026a", 0, retire), mk("k2026b", 0, time.Time{})}},
		// After the rotation: the old key is gone.
		{Name: "rotated", Active: "k2026b", Keys: []vecKey{mk("k2026b", 0, time.Time{})}},
		// An attacker's keyring: the same key id, another secret.
		{Name: "impostor", Active: "k1", Keys: []vecKey{mk("k1", 1, time.Time{})}},
		// The old key marked active before its retirement, base64 secret.
		{Name: "rotation_old_active", Active: "k2026a", Keys: []vecKey{mk("k2026a", 0, retire), mk("k2026b", 0, time.Time{})}},
	}
	for i := range rings {
		var lines []string
		for j, k := range rings[i].Keys {
			secret := k.SecretHex
			if rings[i].Name == "rotation_old_active" && j == 0 {
				b, _ := hex.DecodeString(k.SecretHex)
				secret = "base64:" + strings.TrimRight(b64std(b), "=")
			} else if j%2 == 1 {
				secret = "hex:" + secret
			}
			l := k.ID + ":" + secret
			if k.NotAfter != "" {
				l += " not-after=" + k.NotAfter
			}
			if rings[i].Name == "rotation_old_active" && k.ID == rings[i].Active {
				l += " active"
			}
			lines = append(lines, l)
		}
		sep := "\n"
		if i%2 == 1 {
			sep = ","
		}
		rings[i].Text = "# vector keyring " + rings[i].Name + "\n" + strings.Join(lines, sep) + "\n"
	}
	return rings
}

func vectorKeyringErrors() []vecKeyringError {
	good := hex.EncodeToString(vectorSecret("k1", 0))
	cases := []struct{ name, text string }{
		{"empty", "# nothing\n\n"},
		{"no_colon", "k1" + good},
		{"bad_id", "k 1:" + good},
		{"short_secret", "k1:" + good[:62]},
		{"not_hex", "k1:" + good[:60] + "zz"},
		{"odd_hex", "k1:" + good + "0"},
		{"bad_base64", "k1:base64:!!!!"},
		{"bad_not_after", "k1:" + good + " not-after=tomorrow"},
		{"unknown_attribute", "k1:" + good + " primary"},
		{"duplicate_id", "k1:" + good + "\nk1:" + good},
		{"two_active", "k1:" + good + " active,k2:" + good + " active"},
		{"empty_secret", "k1:"},
	}
	var out []vecKeyringError
	for _, c := range cases {
		_, err := ParseKeyring(c.text)
		if err == nil {
			panic("vector keyring error case " + c.name + " parsed")
		}
		out = append(out, vecKeyringError{Name: c.name, Text: c.text, Error: err.Error()})
	}
	return out
}

func mustKeyring(r vecKeyring) *Keyring {
	kr, err := ParseKeyring(r.Text)
	if err != nil {
		panic(err)
	}
	return kr
}

func keyringByName(rings []vecKeyring, name string) *Keyring {
	for _, r := range rings {
		if r.Name == name {
			return mustKeyring(r)
		}
	}
	panic("no vector keyring " + name)
}

// vcmd is a valid unsigned command for target, issued at issued (offset
// from vectorT0), expiring ttl later.
func vcmd(target fuseschema.Key, version uint64, action fuseschema.Action, state fuseschema.BreakerState, level int, issued, ttl time.Duration) fuseschema.FuseCommand {
	return fuseschema.FuseCommand{
		Target: target, Action: action, State: state, Level: level, Version: version,
		IssuedAtUnixNano: vns(issued), ExpiresAtUnixNano: vns(issued + ttl),
		Reasons: []fuseschema.Reason{{VerdictID: "tail/" + target.String() + "/" + string(action), Text: "p99.9 latency lower bound over budget"}},
	}
}

func vkey(t, s, m, v string) fuseschema.Key {
	return fuseschema.Key{Tenant: t, Service: s, Model: m, Variant: v}
}

func sign(rings []vecKeyring, name string, c fuseschema.FuseCommand) fuseschema.FuseCommand {
	s, err := keyringByName(rings, name).Sign(c)
	if err != nil {
		panic(err)
	}
	return s
}

func encode(c fuseschema.FuseCommand) []byte {
	b, err := c.MarshalJSON()
	if err != nil {
		panic(err)
	}
	return b
}

func codecVectors(rings []vecKeyring) codecFile {
	f := codecFile{Description: "Fuse commands: record value, decoded command, canonical bytes (what the HMAC covers), " +
		"canonical encoding, the signature with the named keyring's active key, the record key; then values that " +
		"schemas.DecodeFuseCommand refuses (kind: malformed, invalid, too_large; field: the member named) and " +
		"commands that encoding refuses. The too_large case has no value_hex: it is commands[0].value_hex without its final '}', " +
		"then 1048576 spaces, then '}'. Generated by fuse/vectors_gen_test.go; do not edit."}
	add := func(name, ring string, c fuseschema.FuseCommand, value []byte) {
		if ring != "" {
			c = sign(rings, ring, c)
		}
		if value == nil {
			value = encode(c)
		}
		d, err := fuseschema.DecodeFuseCommand(value)
		if err != nil {
			panic(name + ": " + err.Error())
		}
		canon, _ := d.CanonicalBytes()
		f.Commands = append(f.Commands, vecCommand{Name: name, ValueHex: hex.EncodeToString(value), Command: encode(d),
			CanonicalHex: hex.EncodeToString(canon), EncodedHex: hex.EncodeToString(encode(d)),
			Keyring: ring, Signature: d.Signature, RecordKey: d.Target.String()})
	}
	base := vcmd(vkey("acme", "chat", "gpt-4o", "canary"), 7, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*time.Minute)
	add("trip_signed", "single", base, nil)
	add("trip_unsigned", "", base, nil)
	add("trip_rotation_new_key", "rotation", base, nil)
	add("trip_rotation_old_key", "rotation_old_active", base, nil)
	deg := vcmd(vkey("*", "*", "gpt-4o", "*"), 1, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, time.Minute, 5*time.Minute)
	deg.Fallback = "gpt-4o-mini"
	deg.CorrelationIDs = []string{"corr-1", "corr-2"}
	deg.Reasons = append(deg.Reasons, fuseschema.Reason{VerdictID: "drift/x", Text: ""})
	add("degrade_wildcards", "single", deg, nil)
	for _, fr := range []struct {
		name string
		f    float64
	}{{"zero", 0}, {"quarter", 0.25}, {"tenth", 0.1}, {"third", 1.0 / 3}, {"one", 1}, {"small_fixed", 1.5e-5}, {"edge_1e-6", 1e-6},
		{"below_1e-6", 9.99e-7}, {"exp", 1e-7}, {"exp_digits", 1.2345678e-9}, {"denormal", 5e-324}, {"just_below_one", math.Nextafter(1, 0)}, {"negative_zero", math.Copysign(0, -1)}} {
		c := vcmd(vkey("t", "s", "m", "v"), 3, fuseschema.ActionThrottle, fuseschema.StateOpen, 1, 0, time.Minute)
		c.ThrottleFraction = fr.f
		add("throttle_fraction_"+fr.name, "single", c, nil)
	}
	ho := vcmd(vkey("t", "s", "m", "*"), 9, fuseschema.ActionHalfOpen, fuseschema.StateHalfOpen, 2, 0, time.Minute)
	ho.ThrottleFraction = 0.05
	add("half_open_probe", "single", ho, nil)
	rb := vcmd(vkey("t", "s", "m", "canary"), 2, fuseschema.ActionRollback, fuseschema.StateOpen, 1, 0, time.Minute)
	rb.Fallback = "baseline"
	add("rollback", "rotation", rb, nil)
	for _, a := range []fuseschema.Action{fuseschema.ActionClose, fuseschema.ActionScaleOut} {
		st := fuseschema.StateClosed
		if a == fuseschema.ActionScaleOut {
			st = fuseschema.StateOpen
		}
		add("advisory_"+string(a), "single", vcmd(vkey("t", "s", "m", "v"), 4, a, st, 0, 0, time.Minute), nil)
	}
	// Strings that exercise every escape rule, non-ASCII and DEL.
	esc := vcmd(vkey("ten<&>ant", "svc/\"quoted\"\\back", "modèle-日本-🚀", "v\t\n\r\b\f\x01\x1f\x7f\u2028\u2029"), 11, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, 0, time.Minute)
	esc.Fallback = "fallback <b>&amp;</b> é"
	esc.Reasons = []fuseschema.Reason{{VerdictID: "id with space % and /", Text: "line1\nline2\u00a0\u0000end"}}
	esc.CorrelationIDs = []string{"", "\u007f", "\U0001F600"}
	add("escapes", "single", esc, nil)
	// Integers past 2^53 and negative times.
	big := vcmd(vkey("t", "s", "m", "v"), math.MaxUint64, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, time.Minute)
	big.IssuedAtUnixNano, big.ExpiresAtUnixNano = math.MinInt64+1, math.MaxInt64
	add("extreme_integers", "single", big, nil)
	neg := vcmd(vkey("t", "s", "m", "v"), 9007199254740993, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, time.Minute)
	neg.IssuedAtUnixNano, neg.ExpiresAtUnixNano = -5, 9007199254740993
	add("past_2_53", "single", neg, nil)
	// A value that is not canonical (members reordered, spaces, escaped
	// characters written differently): it decodes, and its signature is
	// over the canonical re-encoding.
	nc := sign(rings, "single", vcmd(vkey("t", "s", "m", "v"), 5, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, time.Minute))
	nc.Reasons[0].Text = "a<b"
	nc = sign(rings, "single", nc)
	val := `{ "signature" : "` + nc.Signature + `", "key_id":"k1", "schema":"fusebox.fuse_command.v1",` +
		`"target":{"variant":"v","model":"m","service":"s","tenant":"t"},"action":"trip","level":2,"state":"open",` +
		`"version":5,"issued_at_unix_nano":` + i64toa(nc.IssuedAtUnixNano) + `,"expires_at_unix_nano":` + i64toa(nc.ExpiresAtUnixNano) +
		`,"fallback":"","throttle_fraction":0.0e0,"reasons":[{"text":"a\u003cb","verdict_id":"` + nc.Reasons[0].VerdictID + `"}],` +
		"\n" + `"correlation_ids":[]}` + "\n"
	add("non_canonical_value", "", nc, []byte(val))

	// Decode errors.
	good := string(encode(sign(rings, "single", base)))
	type bad struct{ name, value string }
	bads := []bad{
		{"not_json", "not json"},
		{"empty", ""},
		{"array", "[]"},
		{"truncated", good[:len(good)-1]},
		{"trailing_data", good + "{}"},
		{"wrong_schema", strings.Replace(good, "fusebox.fuse_command.v1", "fusebox.fuse_command.v2", 1)},
		{"unknown_member", strings.Replace(good, `"action":`, `"extra":1,"action":`, 1)},
		{"repeated_member", strings.Replace(good, `"action":"trip"`, `"action":"trip","action":"trip"`, 1)},
		{"missing_member", strings.Replace(good, `"fallback":"",`, "", 1)},
		{"missing_target_member", strings.Replace(good, `"variant":"canary"`, `"variant2":"canary"`, 1)},
		{"case_sensitive_name", strings.Replace(good, `"action":`, `"Action":`, 1)},
		{"unknown_action", strings.Replace(good, `"action":"trip"`, `"action":"explode"`, 1)},
		{"unknown_state", strings.Replace(good, `"state":"open"`, `"state":"ajar"`, 1)},
		{"level_too_high", strings.Replace(good, `"level":2`, `"level":3`, 1)},
		{"level_negative", strings.Replace(good, `"level":2`, `"level":-1`, 1)},
		{"level_fraction", strings.Replace(good, `"level":2`, `"level":2.0`, 1)},
		{"version_zero", strings.Replace(good, `"version":7`, `"version":0`, 1)},
		{"version_negative", strings.Replace(good, `"version":7`, `"version":-7`, 1)},
		{"version_overflow", strings.Replace(good, `"version":7`, `"version":18446744073709551616`, 1)},
		{"version_string", strings.Replace(good, `"version":7`, `"version":"7"`, 1)},
		{"issued_overflow", strings.Replace(good, `"issued_at_unix_nano":`, `"issued_at_unix_nano":9`, 1)},
		{"expires_before_issued", strings.Replace(good, `"expires_at_unix_nano":`+i64toa(base.ExpiresAtUnixNano), `"expires_at_unix_nano":`+i64toa(base.IssuedAtUnixNano), 1)},
		{"fraction_above_one", strings.Replace(good, `"throttle_fraction":0`, `"throttle_fraction":1.5`, 1)},
		{"fraction_negative", strings.Replace(good, `"throttle_fraction":0`, `"throttle_fraction":-0.5`, 1)},
		{"fraction_null", strings.Replace(good, `"throttle_fraction":0`, `"throttle_fraction":null`, 1)},
		{"degrade_without_fallback", strings.Replace(good, `"action":"trip"`, `"action":"degrade"`, 1)},
		{"no_reasons", good[:strings.Index(good, `"reasons":[`)+len(`"reasons":[`)] + good[strings.Index(good, `],"correlation_ids"`):]},
		{"empty_verdict_id", strings.Replace(good, `"verdict_id":"tail/acme/chat/gpt-4o/canary/trip"`, `"verdict_id":""`, 1)},
		{"reason_extra_member", strings.Replace(good, `"verdict_id":`, `"weight":1,"verdict_id":`, 1)},
		{"bad_key_id", strings.Replace(good, `"key_id":"k1"`, `"key_id":"k 1"`, 1)},
		{"signature_upper_hex", upperSig(good)},
		{"signature_short", strings.Replace(good, `"signature":"`, `"signature":"ab`, 1)},
		{"signature_without_key_id", strings.Replace(good, `"key_id":"k1"`, `"key_id":""`, 1)},
		{"invalid_utf8", strings.Replace(good, `"tenant":"acme"`, "\"tenant\":\"ac\xffme\"", 1)},
		{"target_not_object", strings.Replace(good, `"target":{"tenant":"acme","service":"chat","model":"gpt-4o","variant":"canary"}`, `"target":"acme/chat/gpt-4o/canary"`, 1)},
		{"too_large", good[:len(good)-1] + strings.Repeat(" ", fuseschema.MaxFuseCommandBytes) + "}"},
	}
	for _, b := range bads {
		_, err := fuseschema.DecodeFuseCommand([]byte(b.value))
		if err == nil {
			panic("decode error case " + b.name + " decoded")
		}
		var fe *fuseschema.FieldError
		field := ""
		if errors.As(err, &fe) {
			field = fe.Field
		}
		kind := "malformed"
		switch {
		case errors.Is(err, fuseschema.ErrTooLarge):
			kind = "too_large"
		case errors.Is(err, fuseschema.ErrInvalid):
			kind = "invalid"
		case !errors.Is(err, fuseschema.ErrMalformed):
			panic("decode error case " + b.name + ": unclassified error " + err.Error())
		}
		v := hex.EncodeToString([]byte(b.value))
		if b.name == "too_large" {
			v = "" // spelled out below (a 1 MiB hex string has no place in a vector file)
		}
		f.DecodeErrors = append(f.DecodeErrors, vecDecodeError{Name: b.name, ValueHex: v, Kind: kind, Field: field, Error: err.Error()})
	}
	// Encode errors: commands Validate refuses (a client must refuse to
	// sign or encode them too).
	encBad := []struct {
		name string
		mut  func(*fuseschema.FuseCommand)
	}{
		{"fraction_nan", func(c *fuseschema.FuseCommand) { c.ThrottleFraction = math.NaN() }},
		{"fraction_inf", func(c *fuseschema.FuseCommand) { c.ThrottleFraction = math.Inf(1) }},
		{"version_zero", func(c *fuseschema.FuseCommand) { c.Version = 0 }},
		{"no_reasons", func(c *fuseschema.FuseCommand) { c.Reasons = nil }},
	}
	for _, e := range encBad {
		c := base
		c.Reasons = append([]fuseschema.Reason(nil), base.Reasons...)
		e.mut(&c)
		_, err := c.CanonicalBytes()
		if err == nil {
			panic("encode error case " + e.name + " encoded")
		}
		var fe *fuseschema.FieldError
		errors.As(err, &fe)
		// The fields as plain JSON (NaN and Inf spelled as strings).
		m := map[string]any{"target": c.Target, "action": c.Action, "level": c.Level, "state": c.State, "version": c.Version,
			"issued_at_unix_nano": c.IssuedAtUnixNano, "expires_at_unix_nano": c.ExpiresAtUnixNano, "fallback": c.Fallback,
			"reasons": reasonsJSON(c.Reasons), "correlation_ids": []string{}, "key_id": "", "signature": ""}
		switch {
		case math.IsNaN(c.ThrottleFraction):
			m["throttle_fraction"] = "NaN"
		case math.IsInf(c.ThrottleFraction, 1):
			m["throttle_fraction"] = "+Inf"
		default:
			m["throttle_fraction"] = c.ThrottleFraction
		}
		raw, _ := json.Marshal(m)
		f.EncodeErrors = append(f.EncodeErrors, vecEncodeError{Name: e.name, Command: raw, Field: fe.Field, Error: err.Error()})
	}
	return f
}

func upperSig(good string) string {
	i := strings.Index(good, `"signature":"`) + len(`"signature":"`)
	return good[:i] + strings.ToUpper(good[i:i+64]) + good[i+64:]
}

func reasonsJSON(rs []fuseschema.Reason) []map[string]string {
	out := []map[string]string{}
	for _, r := range rs {
		out = append(out, map[string]string{"verdict_id": r.VerdictID, "text": r.Text})
	}
	return out
}

func i64toa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func b64std(b []byte) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	var sb strings.Builder
	for i := 0; i < len(b); i += 3 {
		var n uint32
		k := 0
		for j := 0; j < 3; j++ {
			n <<= 8
			if i+j < len(b) {
				n |= uint32(b[i+j])
				k++
			}
		}
		for j := 0; j < 4; j++ {
			if j <= k {
				sb.WriteByte(alphabet[(n>>(18-6*j))&63])
			} else {
				sb.WriteByte('=')
			}
		}
	}
	return sb.String()
}

func verifyVectors(rings []vecKeyring) verifyFile {
	f := verifyFile{Description: "Keyring.Verify of a decoded record value with the named keyring at now: result ok or the " +
		"client's RejectReason (unsigned, unknown_key, key_retired, bad_signature), and Go's error text. " +
		"Generated by fuse/vectors_gen_test.go; do not edit."}
	base := vcmd(vkey("acme", "chat", "gpt-4o", "canary"), 7, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*time.Minute)
	add := func(name string, c fuseschema.FuseCommand, ring string, now time.Duration) {
		kr := keyringByName(rings, ring)
		err := kr.Verify(&c, vectorT0.Add(now))
		res, msg := "ok", ""
		if err != nil {
			res, msg = string(reasonOf(err)), err.Error()
		}
		f.Cases = append(f.Cases, vecVerify{Name: name, ValueHex: hex.EncodeToString(encode(c)), Keyring: ring, NowUnixNano: vns(now), Result: res, Error: msg})
	}
	s1 := sign(rings, "single", base)
	add("single_ok", s1, "single", 0)
	add("unsigned", base, "single", 0)
	add("impostor_secret", sign(rings, "impostor", base), "single", 0)
	tampered := s1
	tampered.Version = 8
	add("tampered_version", tampered, "single", 0)
	tampered = s1
	tampered.Target.Variant = "baseline"
	add("tampered_target", tampered, "single", 0)
	tampered = s1
	tampered.Signature = s1.Signature[:63] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", s1.Signature[63])+1)%16])
	add("flipped_signature_digit", tampered, "single", 0)
	old := sign(rings, "rotation_old_active", base)
	add("rotation_old_key_verifies", old, "rotation", time.Hour)
	add("rotation_old_key_at_not_after", old, "rotation", 2*time.Hour)
	add("rotation_old_key_after_not_after", old, "rotation", 2*time.Hour+time.Nanosecond)
	add("rotation_new_key_verifies", sign(rings, "rotation", base), "rotation", 3*time.Hour)
	add("rotated_old_key_unknown", old, "rotated", 0)
	// The key id is signed: claiming another key of the ring breaks it.
	relabel := sign(rings, "rotation", base)
	relabel.KeyID = "k2026a"
	add("key_id_relabelled", relabel, "rotation", 0)
	unknown := s1
	unknown.KeyID = "k9"
	add("unknown_key_id", unknown, "single", 0)
	return f
}

type seqBuilder struct {
	rings []vecKeyring
	seq   vecSequence
	c     *Client
	now   time.Time
}

func newSeq(rings []vecKeyring, name, ring string, insecure bool) *seqBuilder {
	b := &seqBuilder{rings: rings, seq: vecSequence{Name: name, Keyring: ring, Insecure: insecure}, now: vectorT0}
	opts := []Opt{WithSource(nopSource{}), WithClock(func() time.Time { return b.now })}
	if ring != "" {
		opts = append(opts, WithKeyring(keyringByName(rings, ring)))
	}
	if insecure {
		opts = append(opts, WithInsecureUnsigned())
	}
	c, err := NewClient(opts...)
	if err != nil {
		panic(err)
	}
	b.c = c
	return b
}

// record feeds value (nil: a tombstone) at now and records the result.
func (b *seqBuilder) record(now time.Duration, comment string, value []byte) {
	b.now = vectorT0.Add(now)
	res := recordResult(b.c, value, int64(len(b.seq.Steps)))
	var vh *string
	if value != nil {
		s := hex.EncodeToString(value)
		vh = &s
	}
	b.seq.Steps = append(b.seq.Steps, vecStep{Op: "record", NowUnixNano: b.now.UnixNano(), Comment: comment, ValueHex: vh, Result: res})
}

func (b *seqBuilder) cmd(now time.Duration, comment string, ring string, c fuseschema.FuseCommand) {
	if ring != "" {
		c = sign(b.rings, ring, c)
	}
	b.record(now, comment, encode(c))
}

func (b *seqBuilder) decide(now time.Duration, comment string, k fuseschema.Key) {
	b.now = vectorT0.Add(now)
	d := b.c.Decide(k)
	b.seq.Steps = append(b.seq.Steps, vecStep{Op: "decide", NowUnixNano: b.now.UnixNano(), Comment: comment, Key: &k, Decision: decisionVector(d)})
}

// admitSamples are the u values of every decision's Admit column.
var admitSamples = []float64{0, 0.04, 0.05, 0.1, 0.25, 0.5, 0.999}

func decisionVector(d Decision) *vecDecision {
	v := &vecDecision{Outcome: d.Outcome.String(), Fallback: d.Fallback, Fraction: d.Fraction, Probe: d.Probe, Matched: d.Matched}
	if d.Matched {
		v.Target, v.Version = d.Command.Target.String(), d.Command.Version
	}
	for _, u := range admitSamples {
		v.Admit = append(v.Admit, [2]any{u, d.Admit(u).String()})
	}
	return v
}

// recordResult feeds one record through c.handle and says what happened:
// "applied" or the reason it was rejected.
func recordResult(c *Client, value []byte, off int64) string {
	before := c.Stats()
	c.handle(&Record{Partition: 0, Offset: off, Value: value})
	after := c.Stats()
	if after.Applied > before.Applied {
		return "applied"
	}
	for _, r := range RejectReasons {
		if after.Rejected[r] > before.Rejected[r] {
			return string(r)
		}
	}
	panic("record neither applied nor rejected")
}

func clientVectors(rings []vecKeyring) clientFile {
	f := clientFile{Description: "Client sequences: records read from the fuse topic in order, each applied or rejected " +
		"(RejectReason), at the client's clock now_unix_nano; decide steps give Client.Decide(key) at that clock " +
		"and Decision.Admit(u) for sample u. Generated by fuse/vectors_gen_test.go; do not edit."}
	T := vkey("acme", "chat", "gpt-4o", "canary")
	req := T
	min := time.Minute

	// Key rotation over time.
	s := newSeq(rings, "rotation", "rotation", false)
	s.cmd(0, "signed with the old key before its not-after", "rotation_old_active", vcmd(T, 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.decide(min, "the old key's trip holds", req)
	s.cmd(2*min, "signed with the new key", "rotation", withFallback(vcmd(T, 2, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, 2*min, 10*min), "gpt-4o-mini"))
	s.decide(3*min, "degraded", req)
	s.cmd(2*time.Hour+min, "the old key after its not-after", "rotation_old_active", vcmd(T, 3, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*time.Hour, 10*min))
	s.cmd(2*time.Hour+min, "an impostor's secret under a known key id", "impostor", vcmd(vkey("acme", "chat", "gpt-4o", "*"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*time.Hour, 10*min))
	s.cmd(2*time.Hour+min, "unsigned on a secure client", "", vcmd(T, 4, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*time.Hour, 10*min))
	s.cmd(2*time.Hour+min, "the new key still signs", "rotation", withFraction(vcmd(T, 5, fuseschema.ActionThrottle, fuseschema.StateOpen, 1, 2*time.Hour, 10*min), 0.25))
	s.decide(2*time.Hour+2*min, "throttled", req)
	s.cmd(2*time.Hour+2*min, "retired keyring signer claims a key id the ring lacks", "single", vcmd(T, 6, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*time.Hour+min, 10*min))
	f.Sequences = append(f.Sequences, s.seq)

	// Ordering: (issued_at, version), duplicates, expiry.
	s = newSeq(rings, "ordering", "single", false)
	s.cmd(0, "v10", "single", vcmd(T, 10, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.cmd(0, "the same command again (a redelivery)", "single", vcmd(T, 10, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.cmd(0, "a lower version, same issued-at", "single", vcmd(T, 9, fuseschema.ActionClose, fuseschema.StateClosed, 0, 0, 10*min))
	s.cmd(0, "an earlier issued-at, higher version", "single", vcmd(T, 11, fuseschema.ActionClose, fuseschema.StateClosed, 0, -min, 10*min))
	s.decide(min, "still tripped", req)
	s.cmd(min, "a later issued-at with a lower version wins", "single", withFallback(vcmd(T, 3, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, min, 10*min), "small"))
	s.decide(min, "degraded", req)
	s.cmd(2*min, "same issued-at, higher version", "single", vcmd(T, 4, fuseschema.ActionClose, fuseschema.StateClosed, 0, min, 10*min))
	s.decide(2*min, "closed: allow", req)
	s.cmd(3*min, "absurd version", "single", vcmd(T, math.MaxUint64, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*min, 5*min))
	s.cmd(4*min, "a lower version of the same issued-at is stale while it holds", "single", vcmd(T, 5, fuseschema.ActionClose, fuseschema.StateClosed, 0, 2*min, 30*min))
	s.cmd(4*min, "anything issued later still applies", "single", vcmd(T, 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 3*min, 3*min))
	s.decide(6*min-time.Nanosecond, "one ns before expiry", req)
	s.decide(6*min, "at expires_at: expired, allow", req)
	s.cmd(6*min, "an older command once the held one expired", "single", withFallback(vcmd(T, 2, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, 2*min, 10*min), "small"))
	s.decide(6*min, "the older degrade applies", req)
	s.cmd(13*min, "expired on arrival", "single", vcmd(T, 9, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 2*min, 10*min))
	s.cmd(13*min, "expires exactly now", "single", vcmd(T, 9, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 3*min, 10*min))
	s.cmd(13*min, "duplicate of the held command, though it expired", "single", withFallback(vcmd(T, 2, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, 2*min, 10*min), "small"))
	s.decide(13*min, "nothing in effect", req)
	f.Sequences = append(f.Sequences, s.seq)

	// Malformed records while valid traffic continues.
	s = newSeq(rings, "malformed", "single", false)
	s.cmd(0, "valid", "single", vcmd(T, 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.record(0, "a tombstone", nil)
	s.record(0, "garbage", []byte("\x00\x01garbage"))
	s.record(0, "empty value", []byte{})
	s.record(0, "unknown schema version", []byte(strings.Replace(string(encode(sign(rings, "single", vcmd(T, 2, fuseschema.ActionClose, fuseschema.StateClosed, 0, min, 10*min)))), "v1", "v2", 1)))
	tam := sign(rings, "single", vcmd(T, 2, fuseschema.ActionClose, fuseschema.StateClosed, 0, min, 10*min))
	tam.ThrottleFraction = 0.5
	s.cmd(0, "tampered after signing", "", tam)
	s.decide(min, "the valid trip holds", req)
	s.cmd(min, "valid close", "single", vcmd(T, 3, fuseschema.ActionClose, fuseschema.StateClosed, 0, min, 10*min))
	s.decide(min, "closed", req)
	f.Sequences = append(f.Sequences, s.seq)

	// Insecure clients.
	s = newSeq(rings, "insecure_no_keyring", "", true)
	s.cmd(0, "unsigned accepted", "", vcmd(T, 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.cmd(0, "signed but no keyring", "single", vcmd(T, 2, fuseschema.ActionClose, fuseschema.StateClosed, 0, min, 10*min))
	s.decide(0, "tripped", req)
	f.Sequences = append(f.Sequences, s.seq)
	s = newSeq(rings, "insecure_with_keyring", "single", true)
	s.cmd(0, "unsigned accepted", "", vcmd(T, 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, 10*min))
	s.cmd(0, "signed and verified", "single", withFallback(vcmd(T, 2, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, min, 10*min), "f"))
	s.cmd(0, "signed by an impostor", "impostor", vcmd(T, 3, fuseschema.ActionClose, fuseschema.StateClosed, 0, 2*min, 10*min))
	s.decide(0, "degraded", req)
	f.Sequences = append(f.Sequences, s.seq)

	// Decide: specificity, level, order, target tie-break, every action.
	s = newSeq(rings, "decide", "single", false)
	all := vkey("*", "*", "*", "*")
	s.cmd(0, "everything throttled", "single", withFraction(vcmd(all, 1, fuseschema.ActionThrottle, fuseschema.StateOpen, 1, 0, time.Hour), 0.5))
	s.decide(0, "the global throttle", vkey("x", "y", "z", "w"))
	s.cmd(0, "model-wide degrade", "single", withFallback(vcmd(vkey("*", "*", "gpt-4o", "*"), 1, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, 0, time.Hour), "gpt-4o-mini"))
	s.cmd(0, "tenant-wide trip, level 2", "single", vcmd(vkey("acme", "*", "*", "*"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, time.Hour))
	s.decide(0, "equally specific: the higher level wins", vkey("acme", "chat", "gpt-4o", "canary"))
	s.decide(0, "model-wide degrade for another tenant", vkey("other", "chat", "gpt-4o", "canary"))
	s.cmd(0, "service-wide degrade, level 1", "single", withFallback(vcmd(vkey("*", "chat", "*", "*"), 1, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, time.Second, time.Hour), "svc-fallback"))
	s.decide(0, "level tie between model and service: the later issued-at wins", vkey("other", "chat", "gpt-4o", "canary"))
	s.cmd(0, "variant-wide degrade, same level and order as the service one", "single", withFallback(vcmd(vkey("*", "*", "*", "canary"), 1, fuseschema.ActionDegrade, fuseschema.StateOpen, 1, time.Second, time.Hour), "var-fallback"))
	s.decide(0, "full tie: the smallest target (compared tenant, service, model, variant) wins", vkey("other", "chat", "gpt-4o", "canary"))
	s.cmd(0, "two concrete dimensions beat one", "single", withFallback(vcmd(vkey("other", "*", "gpt-4o", "*"), 1, fuseschema.ActionRollback, fuseschema.StateOpen, 1, 0, time.Hour), "baseline"))
	s.decide(0, "rollback", vkey("other", "chat", "gpt-4o", "canary"))
	s.cmd(0, "exact target half-open probe", "single", withFraction(vcmd(vkey("other", "chat", "gpt-4o", "canary"), 1, fuseschema.ActionHalfOpen, fuseschema.StateHalfOpen, 2, 0, time.Hour), 0.05))
	s.decide(0, "half-open: reject with probe", vkey("other", "chat", "gpt-4o", "canary"))
	s.cmd(0, "exact target degrade in half-open", "single", withFraction(withFallback(vcmd(vkey("other", "chat", "gpt-4o", "baseline"), 1, fuseschema.ActionDegrade, fuseschema.StateHalfOpen, 1, 0, time.Hour), "mini"), 0.1))
	s.decide(0, "degrade with probe", vkey("other", "chat", "gpt-4o", "baseline"))
	s.cmd(0, "exact target closed", "single", vcmd(vkey("acme", "chat", "gpt-4o", "canary"), 1, fuseschema.ActionClose, fuseschema.StateClosed, 0, 0, time.Hour))
	s.decide(0, "a closed exact target does not hide the tenant trip", vkey("acme", "chat", "gpt-4o", "canary"))
	s.cmd(0, "scale_out is advisory", "single", vcmd(vkey("acme", "chat", "gpt-4o", "baseline"), 1, fuseschema.ActionScaleOut, fuseschema.StateOpen, 0, 0, time.Hour))
	s.decide(0, "advisory: the tenant trip decides", vkey("acme", "chat", "gpt-4o", "baseline"))
	s.cmd(0, "a trip that expires soon", "single", vcmd(vkey("zeta", "chat", "m", "v"), 1, fuseschema.ActionTrip, fuseschema.StateOpen, 2, 0, time.Minute))
	s.decide(30*time.Second, "tripped", vkey("zeta", "chat", "m", "v"))
	s.decide(time.Minute, "expired: the service-wide degrade", vkey("zeta", "chat", "m", "v"))
	s.decide(time.Minute, "no command covers it", vkey("zeta", "search", "m", "v"))
	s.decide(2*time.Hour, "everything expired: allow", vkey("acme", "chat", "gpt-4o", "canary"))
	s.decide(0, "empty dimensions are concrete values", vkey("", "", "", ""))
	s.decide(0, "a request key of wildcards matches only wildcard dimensions", vkey("*", "*", "*", "*"))
	f.Sequences = append(f.Sequences, s.seq)
	return f
}

func withFallback(c fuseschema.FuseCommand, fb string) fuseschema.FuseCommand {
	c.Fallback = fb
	return c
}

func withFraction(c fuseschema.FuseCommand, f float64) fuseschema.FuseCommand {
	c.ThrottleFraction = f
	return c
}
