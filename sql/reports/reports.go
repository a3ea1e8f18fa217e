// Package reports holds fusebox's reporting SQL — one file per report in
// this directory, each documenting its parameters in its header — and runs
// it against the tables of clickhousesink's migrations.
//
// The queries are valid on ClickHouse 18.16 and on current servers: they
// read the ReplacingMergeTree tables with FINAL (so replayed rows count
// once), bucket hours and days in UTC (the columns are DateTime('UTC')),
// and take parameters by client-side binding only (@name, rendered by
// clickhouse-go as literals). Tables are unqualified: run them on a
// connection whose default database is the fusebox database.
package reports

import (
	"embed"
	"fmt"
	"strings"
)

//go:embed *.sql
var files embed.FS

// Param names a query parameter.
type Param string

// The parameters reports take (see each SQL file's header).
const (
	ParamFrom      Param = "from"      // Int64 unix seconds, inclusive
	ParamTo        Param = "to"        // Int64 unix seconds, exclusive
	ParamObjective Param = "objective" // Float64 in (0, 1)
	ParamLimit     Param = "limit"     // UInt64
	ParamTarget    Param = "target"    // String, "" for all
	// sla_credit's formula: credit = base × Σ ratio^exponent × hours,
	// capped at cap (0: none).
	ParamCreditBase     Param = "credit_base"     // Float64 >= 0
	ParamCreditExponent Param = "credit_exponent" // Float64 >= 0
	ParamCreditCap      Param = "credit_cap"      // Float64 >= 0, 0 for no cap
)

// Report is one reporting query.
type Report struct {
	// Name is the file name without ".sql" and what `fusebox report` takes.
	Name string
	// Title is the first line of the file's header.
	Title string
	// SQL is the file's text (header comments included).
	SQL string
	// Params are the parameters the query uses.
	Params []Param
}

// The reports, in the order `fusebox report` prints them.
var (
	TailP999Hourly          = mustLoad("tail_p999_hourly", ParamFrom, ParamTo)
	SLOComplianceDaily      = mustLoad("slo_compliance_daily", ParamFrom, ParamTo)
	ErrorBudget             = mustLoad("error_budget", ParamFrom, ParamTo, ParamObjective)
	FuseTimeline            = mustLoad("fuse_timeline", ParamFrom, ParamTo, ParamTarget)
	DriftTop                = mustLoad("drift_top", ParamFrom, ParamTo, ParamLimit)
	CorrectionRateByVariant = mustLoad("correction_rate_by_variant", ParamFrom, ParamTo)
	TenantSLOHealth         = mustLoad("tenant_slo_health", ParamFrom, ParamTo, ParamObjective)
	SLACredit               = mustLoad("sla_credit", ParamFrom, ParamTo, ParamCreditBase, ParamCreditExponent, ParamCreditCap)
)

// All returns every report in print order.
func All() []Report {
	return []Report{TailP999Hourly, SLOComplianceDaily, ErrorBudget, FuseTimeline, DriftTop, CorrectionRateByVariant,
		TenantSLOHealth, SLACredit}
}

// Lookup returns the report with the given name.
func Lookup(name string) (Report, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return Report{}, false
}

// Names returns the report names in print order.
func Names() []string {
	var out []string
	for _, r := range All() {
		out = append(out, r.Name)
	}
	return out
}

// mustLoad reads an embedded file and checks that the parameters declared
// here are exactly the @names the SQL uses, so a file and its declaration
// cannot drift apart unnoticed (a mismatch panics at package init, which
// every test of the package catches).
func mustLoad(name string, params ...Param) Report {
	b, err := files.ReadFile(name + ".sql")
	if err != nil {
		panic(fmt.Sprintf("reports: %s.sql: %v", name, err))
	}
	sql := string(b)
	used := usedParams(sql)
	for _, p := range params {
		if !used[p] {
			panic(fmt.Sprintf("reports: %s.sql does not use declared parameter @%s", name, p))
		}
		delete(used, p)
	}
	for p := range used {
		panic(fmt.Sprintf("reports: %s.sql uses undeclared parameter @%s", name, p))
	}
	title, _, _ := strings.Cut(sql, "\n")
	title = strings.TrimSuffix(strings.TrimPrefix(title, "-- Report "+name+": "), ".")
	return Report{Name: name, Title: title, SQL: sql, Params: params}
}

// usedParams returns the @names in the SQL outside comments and string
// literals.
func usedParams(sql string) map[Param]bool {
	used := map[Param]bool{}
	for _, line := range strings.Split(sql, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		inString := false
		for i := 0; i < len(line); i++ {
			c := line[i]
			if c == '\'' {
				inString = !inString
				continue
			}
			if c != '@' || inString {
				continue
			}
			j := i + 1
			for j < len(line) && (line[j] == '_' || line[j] >= 'a' && line[j] <= 'z' || line[j] >= '0' && line[j] <= '9') {
				j++
			}
			used[Param(line[i+1:j])] = true
			i = j - 1
		}
	}
	return used
}
