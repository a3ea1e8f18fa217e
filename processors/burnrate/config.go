package burnrate

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/fusebox-dev/fusebox/processors"
)

// Config is the `burnrate:` section of an SLO: multiwindow, multi-burn-rate
// alerts as in the Google SRE workbook, chapter "Alerting on SLOs".
type Config struct {
	// Target is the SLO objective: the share of good calls. Default 0.999.
	Target float64 `yaml:"target"`
	// LatencyThresholdMs, when positive, makes a call slower than it a bad
	// call too (a latency SLI); 0 counts only errors. Default 0.
	LatencyThresholdMs float64 `yaml:"latency_threshold_ms"`
	// BadEvents are what makes a call bad besides LatencyThresholdMs:
	// BadErrors (the span's status is ERROR or error.type is set) and
	// BadFailedAnswers (a call that succeeded with a failed answer: cut
	// off, filtered or empty, as the SLO file's answers section defines
	// it, schemas.Answers). With failed_answers the verdicts' details add,
	// per rule, the errors and failed answers of the long window. Default
	// [errors]. Left out of the configuration hash while the default.
	BadEvents []string `yaml:"bad_events" json:",omitempty"`
	// Every is the evaluation interval. Default 1m.
	Every time.Duration `yaml:"every"`
	// Page and Ticket are the alert conditions: an alert fires when the
	// burn rate exceeds Factor over both the Long and the Short window of
	// any one of its rules. Defaults: page 14.4 over 1h and 5m, 6 over 6h
	// and 30m; ticket 3 over 1d and 2h, 1 over 3d and 6h.
	Page   []Rule `yaml:"page"`
	Ticket []Rule `yaml:"ticket"`
	// MinEvents is the fewest calls in a long window for it to count.
	// Default 100.
	MinEvents int `yaml:"min_events"`
	// MinBadEvents is the fewest bad calls in a long window for its rule
	// to fire: one failure among a few hundred calls is a large burn rate
	// but rarely an incident. Default 5.
	MinBadEvents int `yaml:"min_bad_events"`
	// Confidence guards against low traffic: a rule fires only when the
	// lower bound of the Wilson interval (at this level) of the long
	// window's error rate also exceeds Factor × (1 - Target), so that two
	// errors in a hundred calls do not page anyone. At high traffic the
	// bound is close to the rate and the rule is the workbook's. 0
	// disables the guard. Default 0.95.
	Confidence float64 `yaml:"confidence"`
	// Method judges the page verdicts: MethodMultiwindow (default) by the
	// Page rules; MethodCUSUM by a Bernoulli CUSUM of the error rate
	// (stats.BernoulliCUSUM, in-control rate 1 - Target, out-of-control
	// rate CUSUMFactor × (1 - Target)), which accumulates evidence over
	// evaluations instead of waiting for a long window to fill: a burst of
	// 2% errors at a 99.9% target pages in minutes, where the 1h rule
	// needs 43 of them. Tickets always use the Ticket rules.
	Method string `yaml:"method"`
	// CUSUMFactor is the burn rate the CUSUM is tuned to detect (its
	// alternative, P1 = CUSUMFactor × (1 - Target)); it drifts up once
	// the burn rate exceeds about a third of it (5.0 at 14.4 and 99.9%).
	// Default 14.4, the page factor of the 1h rule.
	CUSUMFactor float64 `yaml:"cusum_factor"`
	// CUSUMThreshold is h, in nats: the page breaches while the statistic
	// is at least h. At most E·e^-h false breach episodes in E evaluations
	// while the error rate is at most 1 - Target, whatever the traffic:
	// at the default 15 and Every 1m, 1440·e^-15 = 0.44 per 1,000
	// key-days. Default 15.
	CUSUMThreshold float64 `yaml:"cusum_threshold"`
}

// Bad events.
const (
	BadErrors        = "errors"
	BadFailedAnswers = "failed_answers"
)

// Page methods.
const (
	MethodMultiwindow = "multiwindow"
	MethodCUSUM       = "cusum"
)

// Rule is one (long window, short window, burn-rate factor) condition.
type Rule struct {
	Long   time.Duration `yaml:"long"`
	Short  time.Duration `yaml:"short"`
	Factor float64       `yaml:"factor"`
}

// DefaultConfig returns the defaults listed on Config.
func DefaultConfig() Config {
	return Config{
		Target: 0.999,
		Every:  time.Minute,
		Page: []Rule{
			{Long: time.Hour, Short: 5 * time.Minute, Factor: 14.4},
			{Long: 6 * time.Hour, Short: 30 * time.Minute, Factor: 6},
		},
		Ticket: []Rule{
			{Long: 24 * time.Hour, Short: 2 * time.Hour, Factor: 3},
			{Long: 72 * time.Hour, Short: 6 * time.Hour, Factor: 1},
		},
		BadEvents:      []string{BadErrors},
		MinEvents:      100,
		MinBadEvents:   5,
		Confidence:     0.95,
		Method:         MethodMultiwindow,
		CUSUMFactor:    14.4,
		CUSUMThreshold: 15,
	}
}

// Validate reports every field that is wrong.
func (c *Config) Validate() error {
	var k processors.Check
	k.Probability("target", c.Target)
	k.Fail(c.LatencyThresholdMs < 0, "latency_threshold_ms", "must not be negative")
	k.Fail(c.Every <= 0, "every", "must be a positive duration")
	k.Fail(len(c.Page)+len(c.Ticket) == 0, "page", "page and ticket must not both be empty")
	for _, set := range []struct {
		name  string
		rules []Rule
	}{{"page", c.Page}, {"ticket", c.Ticket}} {
		for i, r := range set.rules {
			f := set.name + "[" + strconv.Itoa(i) + "]"
			k.Fail(r.Short <= 0 || r.Long <= r.Short, f, "needs 0 < short < long")
			k.Fail(c.Every > 0 && (r.Short%c.Every != 0 || r.Long%c.Every != 0), f, "windows must be whole multiples of every")
			k.Fail(!(r.Factor > 0), f+".factor", "must be positive")
		}
	}
	k.Fail(len(c.BadEvents) == 0, "bad_events", "list at least one of errors, failed_answers")
	for i, b := range c.BadEvents {
		f := "bad_events[" + strconv.Itoa(i) + "]"
		k.Fail(b != BadErrors && b != BadFailedAnswers, f, "must be errors or failed_answers, got "+strconv.Quote(b))
		k.Fail(slices.Index(c.BadEvents, b) < i, f, strconv.Quote(b)+" is listed twice")
	}
	k.Fail(c.MinEvents < 0, "min_events", "must not be negative")
	k.Fail(c.MinBadEvents < 0, "min_bad_events", "must not be negative")
	k.Fail(c.Confidence < 0 || c.Confidence >= 1, "confidence", "must be in [0, 1) (0 disables the low-traffic guard)")
	k.Fail(c.Method != MethodMultiwindow && c.Method != MethodCUSUM, "method", "must be multiwindow or cusum, got "+strconv.Quote(c.Method))
	if c.Method == MethodCUSUM {
		k.Fail(len(c.Page) == 0, "page", "method cusum judges the page verdicts: page needs a rule (its long window sets min_events' window)")
		k.Fail(!(c.CUSUMFactor > 1) || c.CUSUMFactor*(1-c.Target) >= 1, "cusum_factor", "must be above 1 with cusum_factor × (1 - target) below 1")
		k.Fail(!(c.CUSUMThreshold > 0) || math.IsInf(c.CUSUMThreshold, 0), "cusum_threshold", "must be a positive number of nats")
	}
	return k.Err()
}

// MarshalJSON is the configuration hash's view of c (the config version in
// every verdict id): with Method multiwindow the page-method fields are
// left out, so that every file written before they existed keeps its
// config version, and editing cusum_* under multiwindow (which decides no
// verdict) keeps it too. BadEvents is left out while it is the default
// [errors], for the same reason.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config
	// Sorted and deduplicated: the order bad_events is written in does not
	// change what makes a call bad, so it keeps the config version.
	c.BadEvents = c.canonicalBadEvents()
	if c.Method != MethodMultiwindow {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Target             float64
		LatencyThresholdMs float64
		BadEvents          []string `json:",omitempty"`
		Every              time.Duration
		Page, Ticket       []Rule
		MinEvents          int
		MinBadEvents       int
		Confidence         float64
	}{c.Target, c.LatencyThresholdMs, c.BadEvents, c.Every, c.Page, c.Ticket, c.MinEvents, c.MinBadEvents, c.Confidence})
}

// defaultBadEvents reports bad_events [errors] (or unset).
func (c *Config) defaultBadEvents() bool {
	return len(c.BadEvents) == 0 || (len(c.BadEvents) == 1 && c.BadEvents[0] == BadErrors)
}

// canonicalBadEvents is BadEvents sorted and deduplicated (a copy), nil
// while the default: the view the configuration hash and the state shape
// take, so that [failed_answers, errors] and [errors, failed_answers] give
// the same config version and state id.
func (c *Config) canonicalBadEvents() []string {
	if c.defaultBadEvents() {
		return nil
	}
	return slices.Compact(slices.Sorted(slices.Values(c.BadEvents)))
}

// UsesAnswers reports failed_answers in bad_events (processors.AnswersUser).
func (c *Config) UsesAnswers() bool { return slices.Contains(c.BadEvents, BadFailedAnswers) }
