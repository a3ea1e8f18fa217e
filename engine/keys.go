package engine

import (
	"slices"

	"github.com/fusebox-dev/fusebox/schemas"
)

// Dimension names, as the SLO file writes them (see schemas.Dimensions).
const (
	DimTenant  = schemas.DimTenant
	DimService = schemas.DimService
	DimModel   = schemas.DimModel
	DimVariant = schemas.DimVariant
)

// Dimensions lists the key dimensions in key order.
var Dimensions = schemas.Dimensions

// KeyDims says which dimensions key the statistics; the others are blanked,
// so their values are pooled.
type KeyDims struct {
	Tenant, Service, Model, Variant bool
}

// AllKeyDims keys by every dimension.
func AllKeyDims() KeyDims { return KeyDims{true, true, true, true} }

// ParseKeyDims turns a list of dimension names into KeyDims; ok is false
// with the first unknown name.
func ParseKeyDims(names []string) (KeyDims, string, bool) {
	var d KeyDims
	for _, n := range names {
		switch n {
		case DimTenant:
			d.Tenant = true
		case DimService:
			d.Service = true
		case DimModel:
			d.Model = true
		case DimVariant:
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

// Match selects the keys an SLO applies to: each non-empty list restricts
// its dimension to the values listed; empty lists match everything.
type Match struct {
	Tenant  []string `yaml:"tenant"`
	Service []string `yaml:"service"`
	Model   []string `yaml:"model"`
	Variant []string `yaml:"variant"`
}

// Matches reports whether k is selected.
func (m *Match) Matches(k schemas.Key) bool {
	return in(m.Tenant, k.Tenant) && in(m.Service, k.Service) && in(m.Model, k.Model) && in(m.Variant, k.Variant)
}

func in(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
