package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// --- per-file loaders and checks ---

func loadGPDRef(raw []json.RawMessage) (func() []string, error) {
	type gpdCase struct {
		Name        *string   `json:"name"`
		TrueXi      *float64  `json:"true_xi"`
		TrueSigma   *float64  `json:"true_sigma"`
		Exceedances []float64 `json:"exceedances"`
		ScipyXi     *float64  `json:"scipy_xi"`
		ScipySigma  *float64  `json:"scipy_sigma"`
		ScipyLoglik *float64  `json:"scipy_loglik"`
	}
	cases, err := decodeCases(raw, func(c *gpdCase) error {
		return need("name", c.Name, "exceedances", c.Exceedances, "scipy_xi", c.ScipyXi,
			"scipy_sigma", c.ScipySigma, "scipy_loglik", c.ScipyLoglik)
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for _, c := range cases {
			fit, err := FitGPD(c.Exceedances)
			if err != nil {
				bad = append(bad, fmt.Sprintf("%s: FitGPD: %v", *c.Name, err))
				continue
			}
			want := *c.ScipyLoglik
			tol := 1e-6 * math.Max(1, math.Abs(want))
			if fit.LogLik < want-tol {
				bad = append(bad, fmt.Sprintf("%s: loglik %.12g < SciPy's %.12g - %.3g", *c.Name, fit.LogLik, want, tol))
			}
			if ll, _ := GPDLogLik(c.Exceedances, fit.Xi, fit.Sigma); !relClose(ll, fit.LogLik, 1e-12, 1e-9) {
				bad = append(bad, fmt.Sprintf("%s: reported loglik %.15g but GPDLogLik gives %.15g", *c.Name, fit.LogLik, ll))
			}
			if math.Abs(fit.LogLik-want) <= tol {
				if d := math.Abs(fit.Xi - *c.ScipyXi); d > math.Max(1e-3*math.Abs(*c.ScipyXi), 1e-4) {
					bad = append(bad, fmt.Sprintf("%s: xi %.8g vs SciPy %.8g", *c.Name, fit.Xi, *c.ScipyXi))
				}
				if !relClose(fit.Sigma, *c.ScipySigma, 1e-3, 0) {
					bad = append(bad, fmt.Sprintf("%s: sigma %.8g vs SciPy %.8g", *c.Name, fit.Sigma, *c.ScipySigma))
				}
			}
		}
		return bad
	}, nil
}

func loadPOTRef(raw []json.RawMessage) (func() []string, error) {
	type potCase struct {
		Xi           *float64           `json:"xi"`
		Sigma        *float64           `json:"sigma"`
		Threshold    *float64           `json:"threshold"`
		NTotal       *int64             `json:"n_total"`
		NExceedances *int64             `json:"n_exceedances"`
		Quantiles    map[string]float64 `json:"quantiles"`
	}
	cases, err := decodeCases(raw, func(c *potCase) error {
		if err := need("xi", c.Xi, "sigma", c.Sigma, "threshold", c.Threshold,
			"n_total", c.NTotal, "n_exceedances", c.NExceedances); err != nil {
			return err
		}
		if len(c.Quantiles) == 0 {
			return errors.New("missing or empty \"quantiles\"")
		}
		for k := range c.Quantiles {
			if p, err := strconv.ParseFloat(k, 64); err != nil || !(p > 0 && p < 1) {
				return fmt.Errorf("quantile key %q is not a probability", k)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for i, c := range cases {
			keys := make([]string, 0, len(c.Quantiles))
			for k := range c.Quantiles {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				p, _ := strconv.ParseFloat(k, 64)
				want := c.Quantiles[k]
				got, err := POTQuantile(*c.Threshold, *c.Xi, *c.Sigma, int(*c.NExceedances), int(*c.NTotal), p)
				if err != nil || !relClose(got, want, 1e-9, 0) {
					bad = append(bad, fmt.Sprintf("case %d p=%s: got %.15g (%v), want %.15g", i, k, got, err, want))
				}
			}
		}
		return bad
	}, nil
}

func loadKSRef(raw []json.RawMessage) (func() []string, error) {
	type ksCase struct {
		N      *int64    `json:"n"`
		M      *int64    `json:"m"`
		X      []float64 `json:"x"`
		Y      []float64 `json:"y"`
		D      *float64  `json:"D"`
		PExact *float64  `json:"p_exact"`
		PAsymp *float64  `json:"p_asymp"`
		PAuto  *float64  `json:"p_auto"`
	}
	cases, err := decodeCases(raw, func(c *ksCase) error {
		if err := need("n", c.N, "m", c.M, "x", c.X, "y", c.Y, "D", c.D); err != nil {
			return err
		}
		if int(*c.N) != len(c.X) || int(*c.M) != len(c.Y) {
			return fmt.Errorf("n=%d, m=%d but %d and %d values", *c.N, *c.M, len(c.X), len(c.Y))
		}
		if c.PExact == nil && c.PAsymp == nil && c.PAuto == nil {
			return errors.New("no p-value (p_exact, p_asymp or p_auto)")
		}
		for _, p := range []*float64{c.PExact, c.PAsymp, c.PAuto} {
			if p != nil && !(*p >= 0 && *p <= 1) {
				return fmt.Errorf("p-value %v outside [0, 1]", *p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for i, c := range cases {
			for _, m := range []struct {
				method KSMethod
				name   string
				want   *float64
			}{{KSExact, "exact", c.PExact}, {KSAsymp, "asymp", c.PAsymp}, {KSAuto, "auto", c.PAuto}} {
				if m.want == nil {
					continue
				}
				r, err := KS2Samp(c.X, c.Y, m.method)
				if err != nil {
					bad = append(bad, fmt.Sprintf("case %d %s: %v", i, m.name, err))
					continue
				}
				if math.Abs(r.D-*c.D) > 1e-12 {
					bad = append(bad, fmt.Sprintf("case %d: D %.17g, want %.17g", i, r.D, *c.D))
				}
				if !relClose(r.P, *m.want, 1e-6, 1e-12) {
					bad = append(bad, fmt.Sprintf("case %d (n=%d m=%d) %s: p %.15g (%s), want %.15g", i, *c.N, *c.M, m.name, r.P, r.Method, *m.want))
				}
				if m.method == KSAuto {
					wantMethod := MethodKSAsymp
					if max(*c.N, *c.M) <= KSMaxAutoExactN {
						wantMethod = MethodKSExact
					}
					if r.Method != wantMethod {
						bad = append(bad, fmt.Sprintf("case %d auto: method %s, want %s", i, r.Method, wantMethod))
					}
				}
			}
		}
		return bad
	}, nil
}

func loadMannWhitneyRef(raw []json.RawMessage) (func() []string, error) {
	type mwCase struct {
		X []float64 `json:"x"`
		Y []float64 `json:"y"`
		U *float64  `json:"U"`
		P *float64  `json:"p_asymptotic"`
	}
	cases, err := decodeCases(raw, func(c *mwCase) error {
		return need("x", c.X, "y", c.Y, "U", c.U, "p_asymptotic", c.P)
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for i, c := range cases {
			r, err := MannWhitneyU(c.X, c.Y)
			if err != nil {
				bad = append(bad, fmt.Sprintf("case %d: %v", i, err))
				continue
			}
			if r.U != *c.U {
				bad = append(bad, fmt.Sprintf("case %d: U %v, want %v", i, r.U, *c.U))
			}
			if !relClose(r.P, *c.P, 1e-9, 0) {
				bad = append(bad, fmt.Sprintf("case %d: p %.15g, want %.15g", i, r.P, *c.P))
			}
		}
		return bad
	}, nil
}

func loadSlopeRef(raw []json.RawMessage) (func() []string, error) {
	type slopeCase struct {
		T              []float64 `json:"t"`
		Y              []float64 `json:"y"`
		OLSSlope       *float64  `json:"ols_slope"`
		OLSIntercept   *float64  `json:"ols_intercept"`
		OLSStderr      *float64  `json:"ols_stderr"`
		OLSPvalue      *float64  `json:"ols_pvalue"`
		TheilSlope     *float64  `json:"theil_slope"`
		TheilIntercept *float64  `json:"theil_intercept"`
		TheilLow       *float64  `json:"theil_low95"`
		TheilHigh      *float64  `json:"theil_high95"`
	}
	cases, err := decodeCases(raw, func(c *slopeCase) error {
		if err := need("t", c.T, "y", c.Y, "ols_slope", c.OLSSlope, "ols_intercept", c.OLSIntercept,
			"ols_stderr", c.OLSStderr, "ols_pvalue", c.OLSPvalue, "theil_slope", c.TheilSlope,
			"theil_intercept", c.TheilIntercept, "theil_low95", c.TheilLow, "theil_high95", c.TheilHigh); err != nil {
			return err
		}
		if len(c.T) != len(c.Y) {
			return fmt.Errorf("%d times but %d values", len(c.T), len(c.Y))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		cmp := func(i int, what string, got, want float64) {
			if !relClose(got, want, 1e-9, 0) {
				bad = append(bad, fmt.Sprintf("case %d: %s %.15g, want %.15g", i, what, got, want))
			}
		}
		for i, c := range cases {
			o, err := OLS(c.T, c.Y)
			if err != nil {
				bad = append(bad, fmt.Sprintf("case %d: OLS: %v", i, err))
			} else {
				cmp(i, "OLS slope", o.Slope, *c.OLSSlope)
				cmp(i, "OLS intercept", o.Intercept, *c.OLSIntercept)
				cmp(i, "OLS stderr", o.StdErr, *c.OLSStderr)
				cmp(i, "OLS p", o.P, *c.OLSPvalue)
			}
			ts, err := TheilSen(c.T, c.Y, 0.95)
			if err != nil {
				bad = append(bad, fmt.Sprintf("case %d: TheilSen: %v", i, err))
				continue
			}
			cmp(i, "Theil–Sen slope", ts.Slope, *c.TheilSlope)
			cmp(i, "Theil–Sen intercept", ts.Intercept, *c.TheilIntercept)
			cmp(i, "Theil–Sen low", ts.Low, *c.TheilLow)
			cmp(i, "Theil–Sen high", ts.High, *c.TheilHigh)
		}
		return bad
	}, nil
}

func loadEntropyRef(raw []json.RawMessage) (func() []string, error) {
	type entropyCase struct {
		Counts     []float64 `json:"counts"`
		Bits       *float64  `json:"entropy_bits"`
		Normalized *float64  `json:"normalized"`
	}
	cases, err := decodeCases(raw, func(c *entropyCase) error {
		return need("counts", c.Counts, "entropy_bits", c.Bits, "normalized", c.Normalized)
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for i, c := range cases {
			h, norm, err := Entropy(c.Counts)
			if err != nil || math.Abs(h-*c.Bits) > 1e-12 || math.Abs(norm-*c.Normalized) > 1e-12 {
				bad = append(bad, fmt.Sprintf("case %d: entropy %.17g normalized %.17g (%v), want %.17g %.17g",
					i, h, norm, err, *c.Bits, *c.Normalized))
			}
		}
		return bad
	}, nil
}

func loadWilsonRef(raw []json.RawMessage) (func() []string, error) {
	type wilsonCase struct {
		K    *int64   `json:"k"`
		N    *int64   `json:"n"`
		Low  *float64 `json:"low"`
		High *float64 `json:"high"`
	}
	cases, err := decodeCases(raw, func(c *wilsonCase) error {
		return need("k", c.K, "n", c.N, "low", c.Low, "high", c.High)
	})
	if err != nil {
		return nil, err
	}
	return func() (bad []string) {
		for i, c := range cases {
			lo, hi, err := Wilson(*c.K, *c.N, 0.95)
			if err != nil || !relClose(lo, *c.Low, 1e-9, 1e-15) || !relClose(hi, *c.High, 1e-9, 1e-15) {
				bad = append(bad, fmt.Sprintf("case %d (k=%d n=%d): [%.15g, %.15g] (%v), want [%.15g, %.15g]",
					i, *c.K, *c.N, lo, hi, err, *c.Low, *c.High))
			}
		}
		return bad
	}, nil
}
