package schemas

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"strconv"
)

// Status is the outcome of one evaluation.
type Status string

const (
	StatusOK               Status = "ok"
	StatusWarn             Status = "warn"
	StatusBreach           Status = "breach"
	StatusInsufficientData Status = "insufficient_data"
)

// Valid reports whether s is one of the four statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusOK, StatusWarn, StatusBreach, StatusInsufficientData:
		return true
	}
	return false
}

// Detail is one named number behind a verdict (a fitted xi, a sample size).
// Details keep the order the processor gives them, so that the JSON and the
// ClickHouse arrays are byte-identical across runs.
type Detail struct {
	Name  string
	Value float64
}

// Verdict is one processor's judgement of one key over one event-time window.
//
// Numbers are finite: a processor that cannot compute a value says
// StatusInsufficientData and leaves Value at 0; it never writes NaN.
type Verdict struct {
	// ID is deterministic (see VerdictID): a replay yields the same id, which
	// is how the sinks collapse duplicates.
	ID        string
	Processor string // tail, drift, decay, scaling, corrections, burnrate
	SLO       string // the SLO's name in the config file
	Metric    string // e.g. "duration_ms", "confidence", "correction_rate"
	Key       Key

	WindowStartUnixNano int64
	WindowEndUnixNano   int64 // the evaluation time: the window is [start, end)

	Value     float64
	Threshold float64 // the budget or limit Value was judged against
	// Lower and Upper bound Value's confidence interval at IntervalLevel
	// (e.g. 0.95); all three are 0 when the method gives no interval.
	Lower, Upper  float64
	IntervalLevel float64

	Status Status
	// Method says how Value was computed (e.g. "gpd_mle_profile",
	// "empirical_quantile", "ks_exact").
	Method string
	// N is the number of observations behind Value.
	N int64
	// Details are the fitted numbers (xi, sigma, threshold u, p-values ...).
	Details []Detail

	ConfigVersion string

	// Evidence, when not nil, summarises the data behind Value for charts
	// (drift: the two ECDFs; tail: the exceedances of the GPD fit). In
	// memory only: the codecs neither write nor read it (see Evidence).
	Evidence *Evidence
}

// VerdictID is the hex SHA-256 (first 16 bytes) of the processor, SLO,
// metric, key, window end and config version: the same evaluation gets the
// same id in every run.
func VerdictID(processor, slo, metric string, key Key, windowEndUnixNano int64, configVersion string) string {
	h := sha256.New()
	for _, s := range []string{processor, slo, metric, key.Tenant, key.Service, key.Model, key.Variant, configVersion} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], uint64(windowEndUnixNano))
	h.Write(t[:])
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:16])
}

// Detail returns the value of the named detail and whether it is present.
func (v *Verdict) Detail(name string) (float64, bool) {
	for _, d := range v.Details {
		if d.Name == name {
			return d.Value, true
		}
	}
	return 0, false
}

// Validate checks that the verdict is complete and every number finite.
func (v *Verdict) Validate() error {
	switch {
	case v.ID == "":
		return invalid("id", "missing")
	case v.Processor == "":
		return invalid("processor", "missing")
	case !v.Status.Valid():
		return invalid("status", "unknown status "+strconv.Quote(string(v.Status)))
	case v.WindowEndUnixNano < v.WindowStartUnixNano:
		return invalid("window_end", "before window_start")
	}
	for _, f := range []struct {
		name string
		x    float64
	}{{"value", v.Value}, {"threshold", v.Threshold}, {"lower", v.Lower}, {"upper", v.Upper}, {"interval_level", v.IntervalLevel}} {
		if math.IsNaN(f.x) || math.IsInf(f.x, 0) {
			return invalid(f.name, "not finite")
		}
	}
	for i, d := range v.Details {
		if math.IsNaN(d.Value) || math.IsInf(d.Value, 0) {
			return invalid("details["+strconv.Itoa(i)+"]("+d.Name+")", "not finite")
		}
	}
	return nil
}
