package engine

import (
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// KeyDims says which dimensions key the statistics; the others are blanked,
// so their values are pooled.
type KeyDims struct {
	Tenant, Service, Model, Variant bool
}

// AllKeyDims keys by every dimension.
func AllKeyDims() KeyDims { return KeyDims{true, true, true, true} }

// ParseKeyDims turns a list of dimension names (schemas.Dimensions) into
// KeyDims; ok is false
// with the first unknown name.
func ParseKeyDims(names []string) (KeyDims, string, bool) {
	var d KeyDims
	for _, n := range names {
		switch n {
		case schemas.DimTenant:
			d.Tenant = true
		case schemas.DimService:
			d.Service = true
		case schemas.DimModel:
			d.Model = true
		case schemas.DimVariant:
			d.Variant = true
		default:
			return d, n, false
		}
	}
	return d, "", true
}

// Project blanks the dimensions not keyed by.
func (d KeyDims) Project(k schemas.Key) schemas.Key {
	if !d.Tenant {
		k.Tenant = ""
	}
	if !d.Service {
		k.Service = ""
	}
	if !d.Model {
		k.Model = ""
	}
	if !d.Variant {
		k.Variant = ""
	}
	return k
}

// in reports whether v is in list, an empty list holding every value (as
// in schemas.Match).
func in(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
