package scaling

import "github.com/fusebox-dev/fusebox/schemas"

// Decision is the scaling hint of one evaluation, as written to the
// verdict's "decision" detail.
type Decision int

const (
	// ScaleIn (-1): the mix has been narrow and latencies steady for
	// ScaleInAfter consecutive evaluations; capacity can probably shrink.
	ScaleIn Decision = -1
	// Hold (0): keep the current capacity.
	Hold Decision = 0
	// ScaleOut (+1): a wide mix with latency spread above budget; add one
	// step of capacity.
	ScaleOut Decision = 1
)

// Judgement is the outcome of the decision table for one window.
type Judgement struct {
	Decision Decision
	Status   schemas.Status
	// LowStreak is the number of consecutive evaluations, this one
	// included, in which both entropy and variance were low.
	LowStreak int
}

// Decide is the decision table. With e the normalised entropy of the
// request mix and sd the latency standard deviation (ms) of the window:
//
//	entropy \ latency sd     sd > budget          budget/2 <= sd <= budget   sd < budget/2
//	e >= EntropyHigh         breach, +1 (out)     ok, 0 (hold)               ok, 0 (hold)
//	EntropyLow <= e < High   ok, 0 (hold)         ok, 0 (hold)               ok, 0 (hold)
//	e < EntropyLow           ok, 0 (hold)         ok, 0 (hold)               low: streak+1
//
// A "low" window (e < EntropyLow and sd < budget/2) extends the low streak;
// any other window resets it to 0. When the streak reaches ScaleInAfter the
// verdict is warn with decision -1 (a scale-in hint; it repeats on every
// further low window), otherwise a low window is ok with decision 0.
//
// High variance with a narrow mix is held on purpose: adding replicas does
// not fix a latency spread that one kind of request causes (that is the
// tail processor's business); a wide mix with a wide spread is the signature
// of load that needs more capacity. The budget/2 margin for "low" is
// hysteresis: a window just under the budget is not yet evidence of
// over-provisioning.
func (c *Config) Decide(normEntropy, stddevMs float64, prevStreak int) Judgement {
	switch {
	case normEntropy >= c.EntropyHigh && stddevMs > c.StdDevBudgetMs:
		return Judgement{Decision: ScaleOut, Status: schemas.StatusBreach}
	case normEntropy < c.EntropyLow && stddevMs < c.StdDevBudgetMs/2:
		streak := prevStreak + 1
		if streak >= c.ScaleInAfter {
			return Judgement{Decision: ScaleIn, Status: schemas.StatusWarn, LowStreak: streak}
		}
		return Judgement{Decision: Hold, Status: schemas.StatusOK, LowStreak: streak}
	}
	return Judgement{Decision: Hold, Status: schemas.StatusOK}
}
