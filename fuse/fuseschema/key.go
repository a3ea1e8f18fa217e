package fuseschema

import (
	"net/url"
	"strconv"
	"strings"
)

// Key identifies the unit fusebox keeps statistics for: one tenant's calls to
// one model from one service in one deployment variant; a FuseCommand's
// Target is a Key. Empty dimensions are allowed (a span without a tenant
// attribute has Tenant ""); the engine may blank dimensions that the SLO
// file does not key by.
type Key struct {
	Tenant  string `json:"tenant"`
	Service string `json:"service"`
	Model   string `json:"model"`
	Variant string `json:"variant"`
}

// The key dimensions, as configuration files name them.
const (
	DimTenant  = "tenant"
	DimService = "service"
	DimModel   = "model"
	DimVariant = "variant"
)

// Dimensions lists the key dimensions in key order.
var Dimensions = []string{DimTenant, DimService, DimModel, DimVariant}

// Wildcard is the value of a Target dimension that matches every value.
const Wildcard = "*"

// String renders the key as "tenant/service/model/variant". Only "%", "/"
// and bytes below 0x21 are percent-escaped inside a dimension, so that a
// "/" in a value cannot be confused with the separator while the usual
// names (and the Wildcard "*") stay readable. ParseKey reverses it.
func (k Key) String() string {
	var b strings.Builder
	b.Grow(len(k.Tenant) + len(k.Service) + len(k.Model) + len(k.Variant) + 3)
	escapeDim(&b, k.Tenant)
	b.WriteByte('/')
	escapeDim(&b, k.Service)
	b.WriteByte('/')
	escapeDim(&b, k.Model)
	b.WriteByte('/')
	escapeDim(&b, k.Variant)
	return b.String()
}

func escapeDim(b *strings.Builder, s string) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '%' || c == '/' || c < 0x21 || c == 0x7f {
			b.WriteByte('%')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
			continue
		}
		b.WriteByte(c)
	}
}

// ParseKey parses the form written by Key.String.
func ParseKey(s string) (Key, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 4 {
		return Key{}, &FieldError{Field: "key", Reason: "want 4 '/'-separated dimensions, got " + strconv.Itoa(len(parts))}
	}
	var dims [4]string
	for i, p := range parts {
		v, err := url.PathUnescape(p)
		if err != nil {
			return Key{}, &FieldError{Field: "key", Reason: "bad escape in dimension " + strconv.Itoa(i) + ": " + err.Error()}
		}
		dims[i] = v
	}
	return Key{Tenant: dims[0], Service: dims[1], Model: dims[2], Variant: dims[3]}, nil
}

// Matches reports whether the key falls under target t, where a target
// dimension equal to Wildcard matches any value.
func (t Key) Matches(k Key) bool {
	return (t.Tenant == Wildcard || t.Tenant == k.Tenant) &&
		(t.Service == Wildcard || t.Service == k.Service) &&
		(t.Model == Wildcard || t.Model == k.Model) &&
		(t.Variant == Wildcard || t.Variant == k.Variant)
}
