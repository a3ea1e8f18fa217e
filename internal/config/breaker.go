package config

import (
	"slices"
	"strconv"

	"github.com/fusebox-dev/fusebox/processors/breaker"
)

// Breaker is the `breaker:` section: the policy of processors/breaker.
type Breaker = breaker.Policy

// DefaultBreaker returns the breaker's default policy.
func DefaultBreaker() Breaker { return breaker.DefaultPolicy() }

// validateBreaker checks the policy and that every target keeps the tenant
// when the statistics are keyed by tenant: fusebox shards state by tenant,
// so a target spanning tenants would be versioned by several workers at
// once.
func validateBreaker(b *Breaker, dims map[string]bool) []fieldErr {
	errs := collect("breaker", b.Validate())
	if !dims["tenant"] {
		return errs
	}
	if !slices.Contains(b.Target, "tenant") {
		errs = append(errs, fieldErr{"breaker.target", "must include tenant: fusebox shards its state by tenant"})
	}
	for i, r := range b.Rules {
		if len(r.Target) > 0 && !slices.Contains(r.Target, "tenant") {
			errs = append(errs, fieldErr{"breaker.rules[" + strconv.Itoa(i) + "].target", "must include tenant: fusebox shards its state by tenant"})
		}
	}
	return errs
}
