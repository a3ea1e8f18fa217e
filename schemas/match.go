package schemas

import "slices"

// Match selects keys: each non-empty list restricts its dimension to the
// values listed; empty lists match every value. It is an SLO entry's
// `match:` section in the SLO file, and what the engine routes spans by.
type Match struct {
	Tenant  []string `yaml:"tenant"`
	Service []string `yaml:"service"`
	Model   []string `yaml:"model"`
	Variant []string `yaml:"variant"`
}

// Matches reports whether k is selected.
func (m *Match) Matches(k Key) bool {
	return in(m.Tenant, k.Tenant) && in(m.Service, k.Service) && in(m.Model, k.Model) && in(m.Variant, k.Variant)
}

func in(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
