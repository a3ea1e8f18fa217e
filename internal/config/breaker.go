package config

// Breaker is the breaker policy (placeholder until processors/breaker lands).
type Breaker struct{}

// DefaultBreaker returns the default policy.
func DefaultBreaker() Breaker { return Breaker{} }

func (b *Breaker) validate(dims map[string]bool) []fieldErr { return nil }
