package schemas

import "slices"

// Match selects keys: each non-empty list restricts its dimension to the
// values listed; empty lists match every value. It is an SLO entry's
// `match:` section in the SLO file, and what the engine routes spans by.
//
// Operation restricts the calls, not the keys: a span is selected when its
// key matches and its Operation (gen_ai.operation.name: chat, embeddings,
// text_completion, ...) is listed. Keys carry no operation, so an SLO per
// operation keeps, per key, only that operation's calls: a P99.9 budget
// per model and operation is one SLO per operation. Corrections name no
// operation; they join the spans an SLO selected.
type Match struct {
	Tenant  []string `yaml:"tenant"`
	Service []string `yaml:"service"`
	Model   []string `yaml:"model"`
	Variant []string `yaml:"variant"`
	// omitempty: a match without operations hashes (StateID, config
	// version) as it did before the field existed.
	Operation []string `yaml:"operation" json:"Operation,omitempty"`
}

// Matches reports whether k is selected (Operation aside: see MatchesSpan).
func (m *Match) Matches(k Key) bool {
	return in(m.Tenant, k.Tenant) && in(m.Service, k.Service) && in(m.Model, k.Model) && in(m.Variant, k.Variant)
}

// MatchesSpan reports whether s is selected: its key matches and its
// operation is listed (or Operation is empty).
func (m *Match) MatchesSpan(s *Span) bool {
	return m.Matches(s.Key) && in(m.Operation, s.Operation)
}

func in(list []string, v string) bool { return len(list) == 0 || slices.Contains(list, v) }
