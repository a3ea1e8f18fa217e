package study

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
)

// The drift-peers streams: one key's per-call confidence score, written
// once by Go and read by fusebox and by the Python peers alike
// (testing/driftpeers), so both sides judge exactly the same values.
//
// The score of a healthy call is Beta with mean 0.8 and sd 0.1
// (Beta(12, 3)): in (0, 1) with no ties and no clipping, left-skewed as a
// confidence score is. Arrivals are Poisson at Rate calls/minute. A change
// stream has ChangeWarmup (2 h) of healthy calls, then the change, then
// ChangeHorizon (1 h) of changed calls; a clean stream is CleanWarmup
// (1 h, not counted) and one counted key-day.
const (
	BaseMean = 0.8
	BaseSD   = 0.1
	// ChangeWarmup is the healthy traffic before a change: the drift
	// processor's reference (1 h) and current (5 min) windows full, and an
	// hour more for the peers' adaptive windows.
	ChangeWarmup = 2 * time.Hour
	// ChangeHorizon is how long a change stream runs after its change: a
	// detector silent that long has missed it.
	ChangeHorizon = time.Hour
	// CleanWarmup is the start of a clean stream whose alarms are not
	// counted (the windows filling); the counted key-day follows it.
	CleanWarmup = time.Hour
)

// Stream kinds. The change kinds alter the score from ChangeWarmup on;
// the clean kinds have no change.
const (
	KindShift05    = "shift-0.05"    // mean 0.80 -> 0.75, sd 0.1
	KindShift10    = "shift-0.10"    // mean 0.80 -> 0.70, sd 0.1
	KindShift20    = "shift-0.20"    // mean 0.80 -> 0.60, sd 0.1
	KindDecline    = "decline-2h"    // mean falls linearly by 0.2 over 2 h (0.1/h), sd 0.1
	KindVariance   = "variance"      // mean 0.8, sd 0.1 -> 0.15 (variance x2.25)
	KindSlice      = "slice-5pct"    // 5% of calls Beta(mean 0.3, sd 0.05), the rest unchanged
	KindStationary = "stationary"    // clean: Poisson at Rate, Beta(12, 3)
	KindCycle      = "nonstationary" // clean: daily cycle, quiet nights, bursts, a daily ±0.02 mean cycle
)

// ChangeKinds and CleanKinds list the kinds in table order.
var (
	ChangeKinds = []string{KindShift05, KindShift10, KindShift20, KindDecline, KindVariance, KindSlice}
	CleanKinds  = []string{KindStationary, KindCycle}
)

// StreamSpec is one stream of the manifest (streams.json).
type StreamSpec struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// RatePerMinute is the mean arrival rate (calls/minute; the
	// nonstationary kind's daily mean).
	RatePerMinute float64 `json:"rate_per_minute"`
	Seed          uint64  `json:"seed"`
	// ChangeAtS is the change's time in seconds from the stream's start;
	// -1 for a clean stream.
	ChangeAtS float64 `json:"change_at_s"`
	// CountFromS is when a clean stream's alarms start to count (s).
	CountFromS float64 `json:"count_from_s"`
	DurationS  float64 `json:"duration_s"`
	// File holds Calls records of 16 bytes, little-endian: int64 event
	// time in ns from the stream's start (ascending), float64 score.
	File  string `json:"file"`
	Calls int    `json:"calls"`
}

// Clean reports whether s has no change.
func (s StreamSpec) Clean() bool { return s.ChangeAtS < 0 }

// Manifest is streams.json: the streams and how they were made.
type Manifest struct {
	Version int `json:"version"`
	// StartUnixS is the event time of every stream's offset 0 (the
	// nonstationary kind's clock: 23:00 UTC, its warm-up, then a day from
	// midnight).
	StartUnixS     int64        `json:"start_unix_s"`
	DetectWithinS  float64      `json:"detect_within_s"`
	Description    string       `json:"description"`
	Streams        []StreamSpec `json:"streams"`
	CleanKeyDays   int          `json:"clean_key_days"`
	SeedsPerChange int          `json:"seeds_per_change"`
}

// StreamStart is offset 0 of every stream: 23:00 UTC, so that a clean
// stream's counted day runs from midnight.
var StreamStart = time.Date(2026, 1, 4, 23, 0, 0, 0, time.UTC)

// StreamsConfig says which streams to write.
type StreamsConfig struct {
	Rates    []float64 // calls/minute; default 200 and 20
	Seeds    int       // per change kind and rate; default 30
	KeyDays  int       // per clean kind and rate; default 40
	Seed     uint64    // of the first stream; default 1
	Kinds    []string  // default every change and clean kind
	Parallel int
}

func (c *StreamsConfig) defaults() {
	if len(c.Rates) == 0 {
		c.Rates = []float64{200, 20}
	}
	if c.Seeds == 0 {
		c.Seeds = 30
	}
	if c.KeyDays == 0 {
		c.KeyDays = 40
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if len(c.Kinds) == 0 {
		c.Kinds = append(append([]string{}, ChangeKinds...), CleanKinds...)
	}
}

// Specs lists the streams of cfg (without Calls and files written).
func (c StreamsConfig) Specs() ([]StreamSpec, error) {
	c.defaults()
	var out []StreamSpec
	for _, kind := range c.Kinds {
		clean := kind == KindStationary || kind == KindCycle
		if !clean && !isChangeKind(kind) {
			return nil, fmt.Errorf("study: unknown stream kind %q", kind)
		}
		for _, rate := range c.Rates {
			if !(rate > 0) {
				return nil, errors.New("study: a stream rate must be positive")
			}
			n := c.Seeds
			if clean {
				n = c.KeyDays
			}
			for i := range n {
				s := StreamSpec{Kind: kind, RatePerMinute: rate, Seed: c.Seed + uint64(i)}
				s.Name = fmt.Sprintf("%s-%g-%03d", kind, rate, s.Seed)
				s.File = s.Name + ".bin"
				if clean {
					s.ChangeAtS = -1
					s.CountFromS = CleanWarmup.Seconds()
					s.DurationS = (CleanWarmup + 24*time.Hour).Seconds()
				} else {
					s.ChangeAtS = ChangeWarmup.Seconds()
					s.DurationS = (ChangeWarmup + ChangeHorizon).Seconds()
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

func isChangeKind(k string) bool {
	for _, c := range ChangeKinds {
		if c == k {
			return true
		}
	}
	return false
}

// Call is one call of a stream.
type Call struct {
	T     int64 // ns from the stream's start
	Score float64
}

// betaMS is the Beta distribution with mean m and sd s (a + b =
// m(1-m)/s² - 1, which must be positive: s² < m(1-m)).
func betaMS(m, s float64, src rand.Source) distuv.Beta {
	n := m*(1-m)/(s*s) - 1
	return distuv.Beta{Alpha: m * n, Beta: (1 - m) * n, Src: src}
}

// Generate returns s's calls. The generator is seeded from s.Seed, the
// kind and the rate, so every stream is reproducible on its own.
func Generate(s StreamSpec) []Call {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%g", s.Kind, s.RatePerMinute)
	src := rand.NewPCG(s.Seed, h.Sum64())
	r := rand.New(src)
	base := betaMS(BaseMean, BaseSD, src)
	end := s.DurationS
	change := s.ChangeAtS
	perS := s.RatePerMinute / 60
	calls := make([]Call, 0, int(perS*end*1.05)+16)
	score := func(t float64) float64 {
		if s.Clean() || t < change {
			if s.Kind == KindCycle {
				return betaMS(cycleMean(t), BaseSD, src).Rand()
			}
			return base.Rand()
		}
		switch s.Kind {
		case KindShift05:
			return betaMS(BaseMean-0.05, BaseSD, src).Rand()
		case KindShift10:
			return betaMS(BaseMean-0.10, BaseSD, src).Rand()
		case KindShift20:
			return betaMS(BaseMean-0.20, BaseSD, src).Rand()
		case KindDecline:
			f := min(1, (t-change)/(2*time.Hour).Seconds())
			return betaMS(BaseMean-0.2*f, BaseSD, src).Rand()
		case KindVariance:
			return betaMS(BaseMean, 0.15, src).Rand()
		case KindSlice:
			if r.Float64() < 0.05 {
				return betaMS(0.3, 0.05, src).Rand()
			}
			return base.Rand()
		}
		panic("study: unknown kind " + s.Kind)
	}
	if s.Kind != KindCycle {
		for t := r.ExpFloat64() / perS; t < end; t += r.ExpFloat64() / perS {
			calls = append(calls, Call{T: int64(t * 1e9), Score: score(t)})
		}
		return calls
	}
	// Thinning (Lewis-Shedler) of a Poisson process at the highest rate.
	bursts := cycleBursts(r, end)
	maxPerS := perS * cycleMaxFactor
	for t := r.ExpFloat64() / maxPerS; t < end; t += r.ExpFloat64() / maxPerS {
		if r.Float64()*cycleMaxFactor < cycleRate(t, bursts) {
			calls = append(calls, Call{T: int64(t * 1e9), Score: score(t)})
		}
	}
	return calls
}

// The nonstationary clean kind: the rate follows a day, its mean the
// stream's rate — 0.15/0.575 = 0.26x at 04:00 (a quiet night), 1.74x at
// 16:00 — times 3 during bursts (4 a day on average, 15 minutes each, at
// uniform times); the score's mean follows the day by ±0.02 (0.82 at
// 16:00, 0.78 at 04:00), sd 0.1. Nothing here is an incident.
const (
	cycleBurstFactor = 3
	cycleMaxFactor   = 1.0 / 0.575 * cycleBurstFactor
)

func hourOfDay(t float64) float64 {
	tt := StreamStart.Add(time.Duration(t * 1e9))
	return float64(tt.Hour()) + float64(tt.Minute())/60 + float64(tt.Second())/3600
}

func cycleMean(t float64) float64 {
	return BaseMean + 0.02*math.Cos(2*math.Pi*(hourOfDay(t)-16)/24)
}

type burst struct{ from, to float64 }

func cycleBursts(r *rand.Rand, end float64) []burst {
	var out []burst
	perS := 4.0 / 86400
	for t := r.ExpFloat64() / perS; t < end; t += r.ExpFloat64() / perS {
		out = append(out, burst{t, t + 15*60})
	}
	return out
}

// cycleRate is the rate factor at t (mean 1 over a day without bursts).
func cycleRate(t float64, bursts []burst) float64 {
	f := (0.15 + 0.85*(1-math.Cos(2*math.Pi*(hourOfDay(t)-4)/24))/2) / 0.575
	for _, b := range bursts {
		if t >= b.from && t < b.to {
			return f * cycleBurstFactor
		}
	}
	return f
}

// WriteCalls writes calls in the stream file format (see StreamSpec.File).
func WriteCalls(w io.Writer, calls []Call) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var rec [16]byte
	for _, c := range calls {
		binary.LittleEndian.PutUint64(rec[:8], uint64(c.T))
		binary.LittleEndian.PutUint64(rec[8:], math.Float64bits(c.Score))
		if _, err := bw.Write(rec[:]); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ReadCalls reads a stream file.
func ReadCalls(path string) ([]Call, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%16 != 0 {
		return nil, fmt.Errorf("study: %s: %d bytes is not a whole number of 16-byte calls", path, len(b))
	}
	calls := make([]Call, len(b)/16)
	for i := range calls {
		calls[i].T = int64(binary.LittleEndian.Uint64(b[16*i:]))
		calls[i].Score = math.Float64frombits(binary.LittleEndian.Uint64(b[16*i+8:]))
	}
	return calls, nil
}

// WriteStreams generates cfg's streams into dir (created) with the
// manifest dir/streams.json, and returns the manifest.
func WriteStreams(dir string, cfg StreamsConfig) (Manifest, error) {
	cfg.defaults()
	specs, err := cfg.Specs()
	if err != nil {
		return Manifest{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Manifest{}, err
	}
	err = parallelEach(len(specs), cfg.Parallel, func(i int) error {
		calls := Generate(specs[i])
		specs[i].Calls = len(calls)
		f, err := os.Create(filepath.Join(dir, specs[i].File))
		if err != nil {
			return err
		}
		if err := WriteCalls(f, calls); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	})
	if err != nil {
		return Manifest{}, err
	}
	m := Manifest{
		Version: 1, StartUnixS: StreamStart.Unix(), DetectWithinS: (30 * time.Minute).Seconds(),
		Description: "one key's per-call confidence score; healthy Beta(12,3) (mean 0.8, sd 0.1); Poisson arrivals; " +
			"change streams: 2h healthy, the change, 1h after; clean streams: 1h warm-up (not counted), 1 counted key-day. " +
			"See docs/drift-peers.md.",
		Streams: specs, CleanKeyDays: cfg.KeyDays, SeedsPerChange: cfg.Seeds,
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return m, err
	}
	return m, os.WriteFile(filepath.Join(dir, "streams.json"), append(b, '\n'), 0o644)
}

// ReadManifest reads dir/streams.json.
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	b, err := os.ReadFile(filepath.Join(dir, "streams.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("study: %s/streams.json: %w", dir, err)
	}
	if m.Version != 1 {
		return m, fmt.Errorf("study: %s/streams.json: version %d, want 1", dir, m.Version)
	}
	return m, nil
}
