package schemas

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Correction events are JSON objects, one per Kafka message, following
// schemas/correction.v1.schema.json (JSON Schema draft 2020-12). The table
// below is the Go side of that schema; a test checks that the two agree.

// correctionProp is one property of the correction schema.
type correctionProp struct {
	name     string
	required bool
	// minLen and maxLen bound a string property in Unicode code points, as
	// JSON Schema's minLength and maxLength do; maxLen 0 means no bound.
	minLen, maxLen int
}

// Property indexes into correctionProps.
const (
	cpSchemaVersion = iota
	cpEventID
	cpTime
	cpTenant
	cpTraceID
	cpSessionID
	cpModel
	cpVariant
	cpKind
	cpContext
	numCorrectionProps
)

// correctionProps lists every property schema version 1 allows, in the order
// EncodeCorrection writes them.
var correctionProps = [numCorrectionProps]correctionProp{
	// Apps and SDKs leave schema_version out: absent, it reads as the
	// current version 1; a version this build does not read is refused.
	cpSchemaVersion: {name: "schema_version"},
	cpEventID:       {name: "event_id", required: true, minLen: 1, maxLen: correctionMaxID},
	cpTime:          {name: "time", required: true},
	cpTenant:        {name: "tenant", required: true, maxLen: correctionMaxID},
	cpTraceID:       {name: "trace_id"},
	cpSessionID:     {name: "session_id", minLen: 1, maxLen: correctionMaxID},
	cpModel:         {name: "model", maxLen: correctionMaxID},
	cpVariant:       {name: "variant", maxLen: correctionMaxID},
	cpKind:          {name: "kind", required: true},
	cpContext:       {name: "context"},
}

const (
	// correctionMaxID bounds ids and names (event, tenant, session, model,
	// variant), in code points.
	correctionMaxID = 256
	// correctionMaxContext bounds the number of context properties.
	correctionMaxContext = 32
	// correctionMaxContextKey and correctionMaxContextValue bound a context
	// property's name and value, in code points.
	correctionMaxContextKey   = 128
	correctionMaxContextValue = 1024
	// correctionTraceIDPattern is the schema's pattern for trace_id: the W3C
	// form, 32 lowercase hex digits (all zeros, the invalid id, is refused too).
	correctionTraceIDPattern = "^[0-9a-f]{32}$"
)

func correctionPropIndex(name []byte) int {
	for i := range correctionProps {
		if correctionProps[i].name == string(name) {
			return i
		}
	}
	return -1
}

// DecodeCorrection decodes and validates one correction event: JSON per
// schemas/correction.v1.schema.json, enforced exactly (unknown properties
// refused, every constraint checked), plus one rule the schema cannot state:
// time must fit int64 Unix nanoseconds (years 1678 to 2262). Time is RFC 3339
// (Go's time.RFC3339Nano: upper-case T and Z). Context properties are
// returned sorted by key.
//
// Text that is not JSON (or not UTF-8) yields an error wrapping ErrMalformed.
// JSON that breaks the schema yields an error wrapping ErrInvalid that joins
// (errors.Join) one *FieldError per broken property, so a dead-letter header
// can list them all; errors.As finds the first.
func DecodeCorrection(msg []byte) (Correction, error) {
	var c Correction
	r := jsonReader{b: msg}
	if r.peek() != '{' {
		if err := r.skip(); err != nil {
			return Correction{}, syntax("message", err)
		}
		if err := r.end(); err != nil {
			return Correction{}, syntax("message", err)
		}
		return Correction{}, invalid("message", "want a JSON object")
	}
	var errs []error
	fail := func(field, reason string) { errs = append(errs, &FieldError{Field: field, Reason: reason}) }
	var present, given uint32 // properties well-typed; properties in the input
	if err := r.open('{'); err != nil {
		return Correction{}, syntax("message", err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return Correction{}, syntax("message", err)
		}
		if !more {
			break
		}
		idx := correctionPropIndex(k)
		if idx < 0 {
			name := string(k)
			if err := r.skip(); err != nil {
				return Correction{}, syntax(name, err)
			}
			fail(name, "unknown property: schema version 1 allows only "+correctionPropList())
			continue
		}
		name := correctionProps[idx].name
		if present&(1<<idx) != 0 {
			if err := r.skip(); err != nil {
				return Correction{}, syntax(name, err)
			}
			fail(name, "appears more than once")
			continue
		}
		present |= 1 << idx
		given |= 1 << idx
		reason, err := decodeCorrectionProp(&r, &c, idx)
		if err != nil {
			return Correction{}, syntax(name, err)
		}
		if reason != "" {
			present &^= 1 << idx // reported; not checked again below
			fail(name, reason)
		}
	}
	if err := r.end(); err != nil {
		return Correction{}, syntax("message", err)
	}
	for i, p := range correctionProps {
		if p.required && given&(1<<i) == 0 {
			fail(p.name, "required")
		}
	}
	if given&(1<<cpSchemaVersion) == 0 {
		c.SchemaVersion = CorrectionSchemaVersion
		present |= 1 << cpSchemaVersion
	}
	errs = checkCorrection(&c, present, errs)
	if given&(1<<cpTraceID|1<<cpSessionID) == 0 {
		fail("trace_id", errNoJoinKey)
	}
	if len(errs) > 0 {
		return Correction{}, wrap(ErrInvalid, errors.Join(errs...))
	}
	slices.SortFunc(c.Context, func(a, b KV) int { return strings.Compare(a.Key, b.Key) })
	return c, nil
}

// decodeCorrectionProp reads the value of property idx into c. It returns a
// reason when the value breaks the schema, or an error when the JSON is
// broken.
func decodeCorrectionProp(r *jsonReader, c *Correction, idx int) (string, error) {
	switch idx {
	case cpSchemaVersion:
		if r.peek() != '-' && (r.peek() < '0' || r.peek() > '9') {
			what := r.what()
			return "want the integer " + strconv.Itoa(CorrectionSchemaVersion) + ", got " + what, r.skip()
		}
		n, err := r.number()
		if err != nil {
			return "", err
		}
		v, err := strconv.ParseFloat(string(n), 64)
		if err != nil || v != CorrectionSchemaVersion {
			return "unsupported version " + string(n) + ": this build reads " + strconv.Itoa(CorrectionSchemaVersion), nil
		}
		c.SchemaVersion = CorrectionSchemaVersion
		return "", nil
	case cpContext:
		return decodeCorrectionContext(r, c)
	}
	if r.peek() != '"' {
		what := r.what()
		return "want a string, got " + what, r.skip()
	}
	b, _, err := r.str()
	if err != nil {
		return "", err
	}
	switch idx {
	case cpTime:
		t, err := time.Parse(time.RFC3339Nano, string(b))
		if err != nil {
			return "not an RFC 3339 date-time: " + strconv.Quote(string(b)), nil
		}
		ns := t.UnixNano()
		if !time.Unix(0, ns).Equal(t) {
			return "out of range: must lie between the years 1678 and 2262", nil
		}
		c.TimeUnixNano = ns
	case cpTraceID:
		id, reason := parseCorrectionTraceID(b)
		if reason != "" {
			return reason, nil
		}
		c.TraceID = id
	default:
		*correctionString(c, idx) = string(b)
	}
	return "", nil
}

// correctionString returns the field of c that string property idx fills.
func correctionString(c *Correction, idx int) *string {
	switch idx {
	case cpEventID:
		return &c.EventID
	case cpTenant:
		return &c.Tenant
	case cpSessionID:
		return &c.SessionID
	case cpModel:
		return &c.Model
	case cpVariant:
		return &c.Variant
	case cpKind:
		return (*string)(&c.Kind)
	}
	panic("schemas: property " + strconv.Itoa(idx) + " is not a plain string")
}

func parseCorrectionTraceID(b []byte) (TraceID, string) {
	var id TraceID
	if len(b) != 32 {
		return id, "want 32 lowercase hex digits, got " + strconv.Itoa(len(b)) + " characters"
	}
	for i, ch := range b {
		var v byte
		switch {
		case ch >= '0' && ch <= '9':
			v = ch - '0'
		case ch >= 'a' && ch <= 'f':
			v = ch - 'a' + 10
		default:
			return id, "want 32 lowercase hex digits, got " + strconv.Quote(string(b))
		}
		id[i/2] = id[i/2]<<4 | v
	}
	if id.IsZero() {
		return id, "the all-zero trace id is invalid"
	}
	return id, ""
}

func decodeCorrectionContext(r *jsonReader, c *Correction) (string, error) {
	if r.peek() != '{' {
		what := r.what()
		return "want an object of strings, got " + what, r.skip()
	}
	if err := r.open('{'); err != nil {
		return "", err
	}
	var reasons []string
	c.Context = c.Context[:0]
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return "", err
		}
		if !more {
			break
		}
		key := string(k)
		if r.peek() != '"' {
			what := r.what()
			if err := r.skip(); err != nil {
				return "", err
			}
			reasons = append(reasons, strconv.Quote(key)+": want a string, got "+what)
			continue
		}
		v, _, err := r.str()
		if err != nil {
			return "", err
		}
		c.Context = append(c.Context, KV{Key: key, Value: string(v)})
	}
	if len(reasons) > 0 {
		c.Context = nil
		return strings.Join(reasons, "; "), nil
	}
	if len(c.Context) == 0 {
		c.Context = nil
	}
	return "", nil
}

// checkCorrection appends to errs a *FieldError for each rule c breaks among
// the properties present (a bit per property index): string bounds, kind,
// context bounds.
func checkCorrection(c *Correction, present uint32, errs []error) []error {
	fail := func(field, reason string) { errs = append(errs, &FieldError{Field: field, Reason: reason}) }
	for i, p := range correctionProps {
		if present&(1<<i) == 0 || p.maxLen == 0 && p.minLen == 0 {
			continue
		}
		n := utf8.RuneCountInString(*correctionString(c, i))
		switch {
		case n < p.minLen:
			fail(p.name, "must not be empty")
		case p.maxLen > 0 && n > p.maxLen:
			fail(p.name, strconv.Itoa(n)+" characters, more than the "+strconv.Itoa(p.maxLen)+" allowed")
		}
	}
	if present&(1<<cpKind) != 0 && !c.Kind.Valid() {
		fail("kind", "unknown kind "+strconv.Quote(string(c.Kind))+"; schema version 1 knows "+correctionKindList())
	}
	if present&(1<<cpContext) != 0 {
		errs = checkCorrectionContext(c.Context, errs)
	}
	return errs
}

func checkCorrectionContext(ctx []KV, errs []error) []error {
	fail := func(reason string) { errs = append(errs, &FieldError{Field: "context", Reason: reason}) }
	if len(ctx) > correctionMaxContext {
		fail(strconv.Itoa(len(ctx)) + " properties, more than the " + strconv.Itoa(correctionMaxContext) + " allowed")
	}
	seen := make(map[string]bool, len(ctx))
	for _, kv := range ctx {
		if seen[kv.Key] {
			fail(strconv.Quote(kv.Key) + " appears more than once")
		}
		seen[kv.Key] = true
		if n := utf8.RuneCountInString(kv.Key); n > correctionMaxContextKey {
			fail("property name of " + strconv.Itoa(n) + " characters, more than the " + strconv.Itoa(correctionMaxContextKey) + " allowed")
		}
		if n := utf8.RuneCountInString(kv.Value); n > correctionMaxContextValue {
			fail(strconv.Quote(kv.Key) + ": value of " + strconv.Itoa(n) + " characters, more than the " + strconv.Itoa(correctionMaxContextValue) + " allowed")
		}
	}
	return errs
}

// errNoJoinKey is the reason given when a correction has no join key.
const errNoJoinKey = "one of trace_id and session_id is required to join the correction to a span"

func correctionPropList() string {
	names := make([]string, len(correctionProps))
	for i, p := range correctionProps {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

func correctionKindList() string {
	kinds := make([]string, len(CorrectionKinds))
	for i, k := range CorrectionKinds {
		kinds[i] = string(k)
	}
	return strings.Join(kinds, ", ")
}

// EncodeCorrection writes c as schema version 1 JSON, which DecodeCorrection
// reads back to c (with Context sorted by key). SchemaVersion 0 stands for
// the current version. Empty optional fields are left out; time is written
// in UTC with nanoseconds. It refuses, with an error wrapping ErrInvalid that
// joins a *FieldError per problem, a correction the schema would refuse.
func EncodeCorrection(c Correction) ([]byte, error) {
	var present uint32 = 1<<cpSchemaVersion | 1<<cpEventID | 1<<cpTime | 1<<cpTenant | 1<<cpKind
	var errs []error
	if c.SchemaVersion != 0 && c.SchemaVersion != CorrectionSchemaVersion {
		errs = append(errs, &FieldError{Field: "schema_version", Reason: "unsupported version " + strconv.Itoa(c.SchemaVersion) + ": this build writes " + strconv.Itoa(CorrectionSchemaVersion)})
	}
	if !c.TraceID.IsZero() {
		present |= 1 << cpTraceID
	}
	for _, f := range []struct {
		idx int
		v   string
	}{{cpSessionID, c.SessionID}, {cpModel, c.Model}, {cpVariant, c.Variant}} {
		if f.v != "" {
			present |= 1 << f.idx
		}
	}
	if len(c.Context) > 0 {
		present |= 1 << cpContext
	}
	for _, s := range []struct{ field, v string }{{"event_id", c.EventID}, {"tenant", c.Tenant}, {"session_id", c.SessionID},
		{"model", c.Model}, {"variant", c.Variant}, {"kind", string(c.Kind)}} {
		if !utf8.ValidString(s.v) {
			errs = append(errs, &FieldError{Field: s.field, Reason: "not valid UTF-8"})
		}
	}
	for _, kv := range c.Context {
		if !utf8.ValidString(kv.Key) || !utf8.ValidString(kv.Value) {
			errs = append(errs, &FieldError{Field: "context", Reason: "not valid UTF-8"})
			break
		}
	}
	errs = checkCorrection(&c, present, errs)
	if present&(1<<cpTraceID|1<<cpSessionID) == 0 {
		errs = append(errs, &FieldError{Field: "trace_id", Reason: errNoJoinKey})
	}
	if len(errs) > 0 {
		return nil, wrap(ErrInvalid, errors.Join(errs...))
	}
	b := make([]byte, 0, 256)
	b = append(b, `{"schema_version":`...)
	b = strconv.AppendInt(b, CorrectionSchemaVersion, 10)
	b = append(b, `,"event_id":`...)
	b = AppendJSONString(b, c.EventID)
	b = append(b, `,"time":"`...)
	b = time.Unix(0, c.TimeUnixNano).UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","tenant":`...)
	b = AppendJSONString(b, c.Tenant)
	if !c.TraceID.IsZero() {
		b = append(b, `,"trace_id":"`...)
		b = append(b, c.TraceID.String()...)
		b = append(b, '"')
	}
	for _, f := range []struct{ key, v string }{{"session_id", c.SessionID}, {"model", c.Model}, {"variant", c.Variant}} {
		if f.v != "" {
			b = append(b, `,"`...)
			b = append(b, f.key...)
			b = append(b, `":`...)
			b = AppendJSONString(b, f.v)
		}
	}
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, string(c.Kind))
	if len(c.Context) > 0 {
		b = append(b, `,"context":{`...)
		for i, kv := range c.Context {
			if i > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, kv.Key)
			b = append(b, ':')
			b = AppendJSONString(b, kv.Value)
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}
