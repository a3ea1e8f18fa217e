// Package openslo converts the SLOs of a fusebox SLO file to OpenSLO v1
// documents (Export) and OpenSLO v1 and v1alpha documents back to fusebox
// SLOs (Importer.Import): `fusebox openslo export` and `import`.
//
// Each fusebox SLO exports as an SLO and its SLI — a ratio SLI for
// burnrate (errors over calls) and corrections (corrections over
// responses), a threshold SLI for tail, drift, decay and scaling — and a
// burn-rate SLO as an AlertPolicy and an AlertCondition per page and
// ticket rule. What OpenSLO has no field for (alphas, windows, caps, the
// key match, the kind) is kept as metadata.annotations under Prefix
// ("fusebox.dev/"), so that Import restores every field: fusebox →
// OpenSLO → fusebox gives the same configuration. A kind with no mapping
// of its own (one added to the registry later) exports with its whole
// section as annotations. Names are RFC 1123 labels, as OpenSLO
// requires: a fusebox name that is not one is slugged and kept as the
// annotation fusebox.dev/name. Burn-rate conditions say op gt (fusebox
// breaches when the burn rate exceeds the factor). docs/openslo.md has the
// table.
//
// Import reads documents generically and names every field it does not
// map as a Problem (file, document, line, field path): refused when it
// would change what fusebox checks, ignored (a note) when it is
// descriptive. Nothing is dropped silently. The result is checked as
// `fusebox config check` checks a file; an SLO it refuses is left out of
// the result's file (Result.LeftOut), so that the file always loads.
package openslo
