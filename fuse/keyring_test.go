package fuse_test

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fusebox-dev/fusebox/fuse"
	"github.com/fusebox-dev/fusebox/fuse/fuseschema"
	"github.com/fusebox-dev/fusebox/fuse/internal/fusetest"
)

var (
	hexSecret = hex.EncodeToString(fusetest.Secret("k1"))
	b64Secret = "base64:" + base64.StdEncoding.EncodeToString(fusetest.Secret("k2"))
)

func TestParseKeyring(t *testing.T) {
	text := "# fuse keys, oldest first\n" +
		"k1:" + hexSecret + " not-after=2026-03-01T00:00:00Z   # retiring\n" +
		"\n" +
		"k2:" + b64Secret + "\n"
	r, err := fuse.ParseKeyring(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.IDs(), ","); got != "k1,k2" || r.Active() != "k2" {
		t.Fatalf("ids %s active %s, want k1,k2 and k2 (the last)", got, r.Active())
	}
	k1, _ := r.Key("k1")
	if want := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC); !k1.NotAfter().Equal(want) {
		t.Fatalf("not-after %v", k1.NotAfter())
	}
	// Comma-separated, explicit prefixes, an explicit active key.
	r, err = fuse.ParseKeyring("a:hex:" + hexSecret + " active, b:base64:" + strings.TrimRight(base64.RawURLEncoding.EncodeToString(fusetest.Secret("b")), "="))
	if err != nil {
		t.Fatal(err)
	}
	if r.Active() != "a" || len(r.IDs()) != 2 {
		t.Fatalf("active %s ids %v", r.Active(), r.IDs())
	}
	// Both secrets decode to what the test signer uses.
	c := fusetest.Cmd(fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}, 1, fuseschema.ActionTrip, fusetest.T0, time.Hour)
	r2, _ := fuse.ParseKeyring("k1:" + hexSecret + ",k2:" + b64Secret)
	for _, id := range []string{"k1", "k2"} {
		signed := fusetest.Sign(c, id)
		if err := r2.Verify(&signed, fusetest.T0); err != nil {
			t.Fatalf("key %s: %v", id, err)
		}
	}
}

func TestParseKeyringErrors(t *testing.T) {
	short := hex.EncodeToString([]byte("0123456789"))
	cases := []struct {
		name, text string
		entry      int
		id, reason string
	}{
		{"empty", "# nothing\n", 0, "", ""},
		{"no colon", "k1" + hexSecret, 1, "", "want id:secret"},
		{"bad id", "k 1:" + hexSecret, 1, "", "want id:secret"},
		{"bad id chars", "k/1:" + hexSecret, 1, "k/1", "key id"},
		{"short secret", "k1:" + hexSecret + "\nk2:" + short, 2, "k2", "shorter than 32"},
		{"bad hex", "k1:hex:zz", 1, "k1", "not valid hex"},
		{"neither", "k1:!!!!", 1, "k1", "not hex (character 1"},
		{"hex typo", "k0:" + hexSecret + ",k1:zz" + hexSecret[2:], 2, "k1", "not hex (character 1 is not a hex digit); write a base64 secret as base64:"},
		{"bare base64", "k1:" + strings.TrimPrefix(b64Secret, "base64:"), 1, "k1", "write a base64 secret as base64:"},
		{"odd hex", "k1:" + hexSecret + "a", 1, "k1", "odd number of hex digits"},
		{"duplicate", "k1:" + hexSecret + ",k1:" + b64Secret, 0, "k1", "listed twice"},
		{"two active", "k1:" + hexSecret + " active,k2:" + b64Secret + " active", 2, "k2", "more than one"},
		{"bad not-after", "k1:" + hexSecret + " not-after=tomorrow", 1, "k1", "RFC 3339"},
		{"unknown attribute", "k1:" + hexSecret + " primary", 1, "k1", "unknown attribute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := fuse.ParseKeyring(tc.text)
			if err == nil {
				t.Fatalf("accepted %q", tc.text)
			}
			if tc.reason == "" {
				if !errors.Is(err, fuse.ErrNoKeys) {
					t.Fatalf("%v, want ErrNoKeys", err)
				}
				return
			}
			var ke *fuse.KeyError
			if !errors.As(err, &ke) || ke.Entry != tc.entry || ke.KeyID != tc.id || !strings.Contains(ke.Reason, tc.reason) {
				t.Fatalf("error %v (%+v), want entry %d id %q reason ~%q", err, ke, tc.entry, tc.id, tc.reason)
			}
			for _, secret := range []string{hexSecret, b64Secret, short} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error message reveals a secret: %v", err)
				}
			}
		})
	}
}

func TestKeyringSources(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fuse.keys")
	if err := os.WriteFile(path, []byte("k1:"+hexSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := fuse.LoadKeyringFile(path)
	if err != nil || r.Active() != "k1" {
		t.Fatalf("file: %v", err)
	}
	if _, err := fuse.LoadKeyringFile(path + ".missing"); err == nil {
		t.Fatalf("missing file accepted")
	}
	os.WriteFile(path, []byte("k1:"+short()+"\n"), 0o600)
	var ke *fuse.KeyError
	if _, err := fuse.LoadKeyringFile(path); !errors.As(err, &ke) || ke.Source != path {
		t.Fatalf("file error %v does not name the file", err)
	}

	t.Setenv(fuse.EnvKeys, "")
	if _, err := fuse.KeyringFromEnv(); !errors.Is(err, fuse.ErrNoKeys) {
		t.Fatalf("unset env: %v", err)
	}
	t.Setenv(fuse.EnvKeys, "old:"+hexSecret+" not-after=2026-01-02T00:00:00Z,new:"+b64Secret)
	r, err = fuse.KeyringFromEnv()
	if err != nil || r.Active() != "new" || len(r.IDs()) != 2 {
		t.Fatalf("env: %v", err)
	}
}

func short() string { return hex.EncodeToString([]byte("too short")) }

func TestSecretsNeverPrinted(t *testing.T) {
	r, err := fuse.ParseKeyring("k1:" + hexSecret + " not-after=2026-03-01T00:00:00Z,k2:" + b64Secret)
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := r.Key("k1")
	s, _ := fuse.NewSigner(r)
	raw := string(fusetest.Secret("k1"))
	for _, v := range []any{k1, &k1, r, *r, s, []fuse.Key{k1}, map[string]fuse.Key{"x": k1}, struct{ K fuse.Key }{k1}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%q", "%d"} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, hexSecret) || strings.Contains(out, b64Secret) || strings.Contains(out, raw) ||
				strings.Contains(out, hex.EncodeToString([]byte(hexSecret))) {
				t.Fatalf("%s of %T reveals a secret: %s", verb, v, out)
			}
		}
	}
	if !strings.Contains(fmt.Sprint(k1), "k1") || !strings.Contains(r.String(), "active k2") {
		t.Fatalf("redacted forms lost the ids: %v %v", k1, r)
	}
}

func TestSignAndVerify(t *testing.T) {
	retire := fusetest.T0.Add(time.Hour)
	old, _ := fuse.NewKey("old", fusetest.Secret("old"), retire)
	cur, _ := fuse.NewKey("new", fusetest.Secret("new"), time.Time{})
	twin, _ := fuse.NewKey("twin", fusetest.Secret("new"), time.Time{}) // same secret, other id
	ring, err := fuse.NewKeyring("", old, cur, twin)
	if err != nil || ring.Active() != "twin" {
		t.Fatalf("%v active %s", err, ring.Active())
	}
	ring, _ = fuse.NewKeyring("new", old, cur, twin)
	c := fusetest.Cmd(fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}, 3, fuseschema.ActionDegrade, fusetest.T0, time.Hour)
	signed, err := ring.Sign(c)
	if err != nil {
		t.Fatal(err)
	}
	// The package signer and the test publisher's independent one agree.
	if err := fusetest.SameBytes(signed, fusetest.Sign(c, "new")); err != nil {
		t.Fatal(err)
	}
	if err := ring.Verify(&signed, fusetest.T0); err != nil {
		t.Fatalf("verify: %v", err)
	}
	relabelled := signed
	relabelled.KeyID = "twin" // the key id is signed too
	tampered := signed
	tampered.Fallback = "other"
	byOld := fusetest.Sign(c, "old")
	byStranger := fusetest.Sign(c, "stranger")
	unsigned := c
	for _, tc := range []struct {
		name string
		c    fuseschema.FuseCommand
		now  time.Time
		want error
	}{
		{"relabelled key id", relabelled, fusetest.T0, fuse.ErrBadSignature},
		{"tampered", tampered, fusetest.T0, fuse.ErrBadSignature},
		{"unknown key", byStranger, fusetest.T0, fuse.ErrUnknownKey},
		{"unsigned", unsigned, fusetest.T0, fuse.ErrUnsigned},
		{"old key in the overlap", byOld, retire, nil},
		{"old key after not-after", byOld, retire.Add(time.Nanosecond), fuse.ErrKeyRetired},
	} {
		if err := ring.Verify(&tc.c, tc.now); !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// A retired active key refuses to sign commands issued after its not-after.
	oldRing, _ := fuse.NewKeyring("old", old)
	late := c
	late.IssuedAtUnixNano, late.ExpiresAtUnixNano = retire.Add(time.Second).UnixNano(), retire.Add(time.Hour).UnixNano()
	if _, err := oldRing.Sign(late); !errors.Is(err, fuse.ErrKeyRetired) {
		t.Fatalf("signing after not-after: %v", err)
	}
}

func TestSigner(t *testing.T) {
	if _, err := fuse.NewSigner(nil); !errors.Is(err, fuse.ErrNoSigningKey) {
		t.Fatalf("no keys: %v, want ErrNoSigningKey", err)
	}
	s, err := fuse.NewSigner(nil, fuse.AllowUnsigned())
	if err != nil || !s.Unsigned() || s.KeyID() != "" {
		t.Fatalf("unsigned signer: %v", err)
	}
	c := fusetest.Sign(fusetest.Cmd(fuseschema.Key{Tenant: "t", Service: "s", Model: "m", Variant: "v"}, 1, fuseschema.ActionTrip, fusetest.T0, time.Hour), "x")
	got, err := s.Sign(c)
	if err != nil || got.KeyID != "" || got.Signature != "" {
		t.Fatalf("unsigned Sign: %+v %v", got, err)
	}
	ring, _ := fuse.ParseKeyring("k1:" + hexSecret)
	s, _ = fuse.NewSigner(ring, fuse.AllowUnsigned())
	cmds := []fuseschema.FuseCommand{c, c}
	if err := s.SignAll(cmds); err != nil || cmds[1].KeyID != "k1" || s.Unsigned() {
		t.Fatalf("SignAll: %v", err)
	}
	cmds[0].Version = 0
	if err := s.SignAll(cmds); err == nil || !strings.Contains(err.Error(), "command 0") {
		t.Fatalf("SignAll of an invalid command: %v", err)
	}
}
