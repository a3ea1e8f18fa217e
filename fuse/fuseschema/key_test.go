package fuseschema

import "testing"

func TestKeyStringRoundTrip(t *testing.T) {
	for _, k := range []Key{
		{},
		{Tenant: "acme", Service: "chat", Model: "gpt-4o", Variant: "canary"},
		{Tenant: "*", Service: "chat", Model: "*", Variant: "*"},
		{Tenant: "a/b", Service: "50%", Model: "x y", Variant: "é\x00"},
	} {
		s := k.String()
		got, err := ParseKey(s)
		if err != nil || got != k {
			t.Fatalf("ParseKey(%q) = %+v, %v; want %+v", s, got, err, k)
		}
	}
	if s := (Key{Tenant: "*", Service: "chat", Model: "m", Variant: "*"}).String(); s != "*/chat/m/*" {
		t.Fatalf("wildcard key renders as %q", s)
	}
	if _, err := ParseKey("a/b/c"); err == nil {
		t.Fatal("three dimensions accepted")
	}
	if _, err := ParseKey("a/b/c/%zz"); err == nil {
		t.Fatal("bad escape accepted")
	}
}
