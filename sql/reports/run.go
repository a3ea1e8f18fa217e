package reports

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Args are the parameter values for a run; each report binds the ones it
// uses.
type Args struct {
	From, To  time.Time // the range [From, To), truncated to whole seconds
	Objective float64   // error_budget's availability and tenant_slo_health's minutes objective (default 0.999)
	Limit     int       // drift_top's row limit (default 20)
	Target    string    // fuse_timeline's target filter ("" for all)
	// sla_credit's formula (sla_credit.sql): credit = CreditBase ×
	// Σ (overrun ÷ threshold)^CreditExponent × hours out, capped at
	// CreditCap when CreditCap > 0. Defaults 1, 2 and 0 (no cap).
	CreditBase, CreditExponent, CreditCap float64
}

// DefaultArgs returns Args with the defaults above and no range.
func DefaultArgs() Args { return Args{Objective: 0.999, Limit: 20, CreditBase: 1, CreditExponent: 2} }

// ArgError names the argument that is wrong.
type ArgError struct {
	Arg    string
	Reason string
}

func (e *ArgError) Error() string { return "reports: " + e.Arg + ": " + e.Reason }

// Validate checks the arguments the report r uses.
func (a *Args) Validate(r Report) error {
	var errs []error
	for _, p := range r.Params {
		switch p {
		case ParamFrom, ParamTo:
			if p == ParamTo && !a.To.After(a.From) {
				errs = append(errs, &ArgError{Arg: "to", Reason: fmt.Sprintf("%s is not after from %s", a.To.UTC().Format(time.RFC3339), a.From.UTC().Format(time.RFC3339))})
			}
		case ParamObjective:
			if !(a.Objective > 0 && a.Objective < 1) {
				errs = append(errs, &ArgError{Arg: "objective", Reason: fmt.Sprintf("%v: must be in (0, 1), e.g. 0.999", a.Objective)})
			}
		case ParamCreditBase, ParamCreditExponent, ParamCreditCap:
			v := map[Param]float64{ParamCreditBase: a.CreditBase, ParamCreditExponent: a.CreditExponent, ParamCreditCap: a.CreditCap}[p]
			if !(v >= 0) || math.IsInf(v, 0) {
				errs = append(errs, &ArgError{Arg: strings.ReplaceAll(string(p), "_", "-"), Reason: fmt.Sprintf("%v: must be a finite number >= 0", v)})
			}
		case ParamLimit:
			if a.Limit < 1 {
				errs = append(errs, &ArgError{Arg: "limit", Reason: fmt.Sprintf("%d: must be at least 1", a.Limit)})
			}
		}
	}
	return errors.Join(errs...)
}

func (a *Args) bind(r Report) []any {
	var out []any
	for _, p := range r.Params {
		var v any
		switch p {
		case ParamFrom:
			v = a.From.Unix()
		case ParamTo:
			v = a.To.Unix()
		case ParamObjective:
			v = a.Objective
		case ParamLimit:
			v = uint64(a.Limit)
		case ParamTarget:
			v = a.Target
		case ParamCreditBase:
			v = a.CreditBase
		case ParamCreditExponent:
			v = a.CreditExponent
		case ParamCreditCap:
			v = a.CreditCap
		}
		out = append(out, chgo.Named(string(p), v))
	}
	return out
}

// Table is a report's result.
type Table struct {
	Report  string
	Columns []string
	// Types are the ClickHouse types of the columns ("DateTime('UTC')",
	// "Float64", "Array(String)" ...).
	Types []string
	// Rows hold the values as clickhouse-go scans them: string, int and
	// uint types, float64, time.Time (UTC), []string ...
	Rows [][]any
}

// Run executes r on conn (whose default database holds the fusebox
// tables) with args.
func (r Report) Run(ctx context.Context, conn driver.Conn, args Args) (*Table, error) {
	if err := args.Validate(r); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, r.SQL, args.bind(r)...)
	if err != nil {
		return nil, fmt.Errorf("reports: %s: %w", r.Name, err)
	}
	defer rows.Close()
	t := &Table{Report: r.Name, Columns: rows.Columns()}
	cts := rows.ColumnTypes()
	types := make([]reflect.Type, len(cts))
	for i, ct := range cts {
		t.Types = append(t.Types, ct.DatabaseTypeName())
		types[i] = ct.ScanType()
	}
	for rows.Next() {
		dest := make([]any, len(types))
		for i, typ := range types {
			dest[i] = reflect.New(typ).Interface()
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("reports: %s: scan: %w", r.Name, err)
		}
		row := make([]any, len(dest))
		for i, d := range dest {
			v := reflect.ValueOf(d).Elem().Interface()
			if tm, ok := v.(time.Time); ok {
				v = tm.UTC()
			}
			row[i] = v
		}
		t.Rows = append(t.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reports: %s: %w", r.Name, err)
	}
	return t, nil
}
