package schemas

import (
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Reading gen_ai.evaluation.result events from OTLP protobuf: span events
// inside TracesData, and log records inside LogsData (opentelemetry-proto's
// logs/v1/logs.proto: LogsData.resource_logs = 1; ResourceLogs.resource =
// 1, scope_logs = 2; ScopeLogs.log_records = 2; LogRecord.time_unix_nano =
// 1, attributes = 6, trace_id = 9, span_id = 10, observed_time_unix_nano =
// 11, event_name = 12. Span.events = 11; Span.Event.time_unix_nano = 1,
// name = 2, attributes = 3).
//
// Only the fields named here are read; others are skipped by their wire
// type. A known field with the wrong wire type, a truncated message or an
// id of the wrong length is ErrMalformed; an evaluation or context
// attribute of an unusable type is ErrInvalid, with a FieldError naming it.
// Attributes are read only on evaluation events and on the spans and
// resources that hold one.

// evalAttrIDs numbers the attributes an evaluation reads.
const (
	eaName = iota
	eaLabel
	eaScore
	eaExplanation
	eaResponseID
	eaTenant
	eaSession
	eaModel
	eaResponseModel
	eaVariant
	eaEventName // event.name: the event name of older log records
	numEvalAttrs
)

// evalReader holds the names and limits, and reads attribute lists.
type evalReader struct {
	names [numEvalAttrs]string
	lim   Limits
	dst   []Evaluation
	bad   EvaluationErrors // events skipped for an unusable attribute of their own
}

// result is what a reader returns: the events and, when some were skipped,
// their errors.
func (r *evalReader) result() ([]Evaluation, error) {
	if len(r.bad) > 0 {
		return r.dst, r.bad
	}
	return r.dst, nil
}

// start readies r to append the events of msg to dst. It fails, with an
// ErrTooLarge error, when msg is over lim's MaxMessageBytes.
func (r *evalReader) start(msg []byte, n AttributeNames, lim Limits, dst []Evaluation) error {
	n = n.withDefaults()
	r.names = [numEvalAttrs]string{
		eaName: "gen_ai.evaluation.name", eaLabel: "gen_ai.evaluation.score.label",
		eaScore: "gen_ai.evaluation.score.value", eaExplanation: "gen_ai.evaluation.explanation",
		eaResponseID: "gen_ai.response.id", eaTenant: n.Tenant, eaSession: n.Session,
		eaModel: "gen_ai.request.model", eaResponseModel: "gen_ai.response.model", eaVariant: n.Variant,
		eaEventName: "event.name",
	}
	r.lim = lim.withDefaults()
	r.dst = dst
	if len(msg) > r.lim.MaxMessageBytes {
		return tooLargeLimit("message", "max_message_bytes", len(msg), r.lim.MaxMessageBytes, "bytes")
	}
	return nil
}

// evalAttrs is what one attribute list holds of the evaluation attributes;
// the first occurrence of a key wins.
type evalAttrs struct {
	str   [numEvalAttrs]string
	has   uint16 // bit i: attribute i present
	score float64
}

// attrs reads a list of KeyValue payloads at path into a.
func (r *evalReader) attrs(kvs [][]byte, path string, a *evalAttrs) error {
	for i, kv := range kvs {
		key, val, ok := splitKV(kv)
		if !ok {
			var err error
			if key, val, err = r.splitKVSlow(kv, path+".attributes["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		id := -1
		for j := range r.names {
			if r.names[j] == string(key) {
				id = j
				break
			}
		}
		if id < 0 || a.has&(1<<id) != 0 {
			continue
		}
		var v attrVal
		if p, sub := parseAnyValue(val, &v, false, r.lim.MaxStringBytes); p.kind != nil {
			return wrap(p.kind, &FieldError{Field: path + ".attributes[" + string(key) + "].value" + sub, Reason: p.reason})
		}
		if v.kind == kindEmpty {
			continue
		}
		bad := func(want string) error {
			return wrap(ErrInvalid, &FieldError{Field: path + ".attributes[" + r.names[id] + "]",
				Reason: "want " + want + ", got " + v.kind.String()})
		}
		switch {
		case id == eaScore:
			switch v.kind {
			case kindDouble:
				a.score = v.f
			case kindInt:
				a.score = float64(v.i)
			default:
				return bad("a double or an int")
			}
		case v.kind == kindString:
			if !utf8.Valid(v.str) {
				return wrap(ErrMalformed, &FieldError{Field: path + ".attributes[" + r.names[id] + "]", Reason: "string is not valid UTF-8"})
			}
			a.str[id] = string(v.str)
		case v.kind == kindInt && id != eaExplanation:
			a.str[id] = strconv.FormatInt(v.i, 10)
		default:
			return bad("a string")
		}
		a.has |= 1 << id
	}
	return nil
}

// splitKVSlow reads a KeyValue of any encoding.
func (r *evalReader) splitKVSlow(b []byte, path string) (key, val []byte, err error) {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return nil, nil, malformed(path, reason)
		}
		b = b[n:]
		if reason := checkType(&f, keyValueTypes[:]); reason != "" {
			return nil, nil, malformed(path+"."+fieldName(keyValueNames[:], f.num), reason)
		}
		switch f.num {
		case 1:
			if len(f.v) > r.lim.MaxStringBytes {
				return nil, nil, tooLargeLimit(path+".key", "max_string_bytes", len(f.v), r.lim.MaxStringBytes, "bytes")
			}
			key = f.v
		case 2:
			val = f.v
		}
	}
	return key, val, nil
}

// fields calls fn for every field of message b at path, checking the wire
// types given in types (field number -> type; others are skipped).
func fields(b []byte, path string, types map[protowire.Number]protowire.Type, fn func(f *field) error) error {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(path, reason)
		}
		b = b[n:]
		want, known := types[f.num]
		if !known {
			continue
		}
		if f.typ != want {
			return malformed(path+".field "+strconv.Itoa(int(f.num)), "wrong wire type "+wireTypeNames[f.typ&7]+", want "+wireTypeNames[want&7])
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	return nil
}

var (
	lenOnly1     = map[protowire.Number]protowire.Type{1: protowire.BytesType}
	lenOnly2     = map[protowire.Number]protowire.Type{2: protowire.BytesType}
	lenOnly12    = map[protowire.Number]protowire.Type{1: protowire.BytesType, 2: protowire.BytesType}
	evalSpanType = map[protowire.Number]protowire.Type{1: protowire.BytesType, 2: protowire.BytesType,
		8: protowire.Fixed64Type, 9: protowire.BytesType, 11: protowire.BytesType}
	evalEventType = map[protowire.Number]protowire.Type{1: protowire.Fixed64Type, 2: protowire.BytesType, 3: protowire.BytesType}
	evalLogType   = map[protowire.Number]protowire.Type{1: protowire.Fixed64Type, 6: protowire.BytesType,
		9: protowire.BytesType, 10: protowire.BytesType, 11: protowire.Fixed64Type, 12: protowire.BytesType}
)

// resource reads the resource's attributes (ResourceSpans and ResourceLogs
// both hold the Resource in field 1, its attributes in field 1).
func (r *evalReader) resource(b []byte, path string, a *evalAttrs) error {
	var kvs [][]byte
	if err := fields(b, path, lenOnly1, func(f *field) error { kvs = append(kvs, f.v); return nil }); err != nil {
		return err
	}
	return r.attrs(kvs, path, a)
}

// ids copies a trace id (16 bytes) or span id (8 bytes); empty means absent.
func ids(dst []byte, v []byte, path string) error {
	switch len(v) {
	case len(dst):
		copy(dst, v)
	case 0:
	default:
		return malformed(path, "want "+strconv.Itoa(len(dst))+" bytes, got "+strconv.Itoa(len(v)))
	}
	return nil
}

// DecodeOTLPSpanEvaluations appends to dst every gen_ai.evaluation.result
// span event of one OTLP TracesData message in protobuf, with the trace and
// span id of the span it is on, and returns the extended slice. On error the
// slice is dst unchanged, except for EvaluationErrors (some events skipped). Spans in the pre-0.15 instrumentation_library_spans
// field are not read for events.
func DecodeOTLPSpanEvaluations(msg []byte, names AttributeNames, lim Limits, dst []Evaluation) ([]Evaluation, error) {
	return decodeEvaluations(msg, names, lim, dst, false)
}

// decodeEvaluations reads a TracesData message (logs false) or a LogsData
// message (logs true): both are a list of resource entries in field 1.
func decodeEvaluations(msg []byte, names AttributeNames, lim Limits, dst []Evaluation, logs bool) ([]Evaluation, error) {
	var r evalReader
	if err := r.start(msg, names, lim, dst); err != nil {
		return dst, err
	}
	top := "traces_data"
	if logs {
		top = "logs_data"
	}
	ri := 0
	err := fields(msg, top, lenOnly1, func(f *field) error {
		defer func() { ri++ }()
		if logs {
			return r.resourceLogs(f.v, ri)
		}
		return r.resourceSpans(f.v, ri)
	})
	if err != nil {
		return dst, err
	}
	return r.result()
}

// resourceEntry splits a ResourceSpans or ResourceLogs message at path into
// its resource (field 1) and its scope entries (field 2).
func resourceEntry(b []byte, path string) (res []byte, scopes [][]byte, err error) {
	err = fields(b, path, lenOnly12, func(f *field) error {
		if f.num == 1 {
			res = f.v
		} else {
			scopes = append(scopes, f.v)
		}
		return nil
	})
	return res, scopes, err
}

func (r *evalReader) resourceSpans(b []byte, ri int) error {
	path := "resource_spans[" + strconv.Itoa(ri) + "]"
	res, scopes, err := resourceEntry(b, path)
	if err != nil {
		return err
	}
	var ra *evalAttrs // read when an event needs it
	resAttrs := func() (*evalAttrs, error) {
		if ra == nil {
			ra = &evalAttrs{}
			if err := r.resource(res, resourcePath(ri), ra); err != nil {
				return nil, err
			}
		}
		return ra, nil
	}
	for si, sb := range scopes {
		pi := 0
		if err := fields(sb, path+".scope_spans["+strconv.Itoa(si)+"]", lenOnly2, func(f *field) error {
			defer func() { pi++ }()
			return r.span(f.v, spanPath(ri, si, pi), resAttrs)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (r *evalReader) span(b []byte, path string, resAttrs func() (*evalAttrs, error)) error {
	var tid TraceID
	var sid SpanID
	var end int64
	var kvs, events [][]byte
	if err := fields(b, path, evalSpanType, func(f *field) error {
		switch f.num {
		case 1:
			return ids(tid[:], f.v, path+".trace_id")
		case 2:
			return ids(sid[:], f.v, path+".span_id")
		case 8:
			end = int64(f.u)
		case 9:
			kvs = append(kvs, f.v)
		case 11:
			events = append(events, f.v)
		}
		return nil
	}); err != nil {
		return err
	}
	var sa *evalAttrs
	for ei, eb := range events {
		epath := path + ".events[" + strconv.Itoa(ei) + "]"
		var t int64
		var name []byte
		var ekvs [][]byte
		if err := fields(eb, epath, evalEventType, func(f *field) error {
			switch f.num {
			case 1:
				t = int64(f.u)
			case 2:
				name = f.v
			case 3:
				ekvs = append(ekvs, f.v)
			}
			return nil
		}); err != nil {
			return err
		}
		if string(name) != EvaluationEventName {
			continue
		}
		var ea evalAttrs
		if err := r.attrs(ekvs, epath, &ea); err != nil {
			r.bad = append(r.bad, err)
			continue
		}
		if sa == nil {
			sa = &evalAttrs{}
			if err := r.attrs(kvs, path, sa); err != nil {
				return err
			}
		}
		ra, err := resAttrs()
		if err != nil {
			return err
		}
		if t == 0 {
			t = end
		}
		r.dst = append(r.dst, evaluationOf(tid, sid, t, &ea, sa, ra))
	}
	return nil
}

// evaluationOf builds an Evaluation from the event's attributes, falling
// back to the other lists (in order) for the context attributes.
func evaluationOf(tid TraceID, sid SpanID, t int64, ev *evalAttrs, rest ...*evalAttrs) Evaluation {
	e := Evaluation{TraceID: tid, SpanID: sid, TimeUnixNano: t,
		Name: ev.str[eaName], Label: ev.str[eaLabel], Explanation: ev.str[eaExplanation], ResponseID: ev.str[eaResponseID]}
	if ev.has&(1<<eaScore) != 0 {
		e.Score, e.HasScore = ev.score, true
	}
	ctx := func(id int) string {
		if s := ev.str[id]; s != "" {
			return s
		}
		for _, a := range rest {
			if s := a.str[id]; s != "" {
				return s
			}
		}
		return ""
	}
	e.Tenant, e.SessionID, e.Variant = ctx(eaTenant), ctx(eaSession), ctx(eaVariant)
	if e.Model = ctx(eaModel); e.Model == "" {
		e.Model = ctx(eaResponseModel)
	}
	return e
}

// DecodeOTLPLogEvaluations appends to dst every gen_ai.evaluation.result
// event among the log records of one OTLP LogsData message (wire identical
// to ExportLogsServiceRequest) in protobuf, as the Collector's kafka
// exporter writes logs, and returns the extended slice. A record is an
// evaluation event when its event_name is gen_ai.evaluation.result, or,
// without an event_name, its event.name attribute is. Other records are
// skipped. On error the slice is dst unchanged, except for EvaluationErrors
// (some events skipped, the others returned).
func DecodeOTLPLogEvaluations(msg []byte, names AttributeNames, lim Limits, dst []Evaluation) ([]Evaluation, error) {
	return decodeEvaluations(msg, names, lim, dst, true)
}

func (r *evalReader) resourceLogs(b []byte, ri int) error {
	path := "resource_logs[" + strconv.Itoa(ri) + "]"
	res, scopes, err := resourceEntry(b, path)
	if err != nil {
		return err
	}
	var ra *evalAttrs
	for si, sb := range scopes {
		li := 0
		if err := fields(sb, path+".scope_logs["+strconv.Itoa(si)+"]", lenOnly2, func(f *field) error {
			defer func() { li++ }()
			lpath := path + ".scope_logs[" + strconv.Itoa(si) + "].log_records[" + strconv.Itoa(li) + "]"
			var tid TraceID
			var sid SpanID
			var t, observed int64
			var eventName []byte
			var kvs [][]byte
			if err := fields(f.v, lpath, evalLogType, func(f *field) error {
				switch f.num {
				case 1:
					t = int64(f.u)
				case 6:
					kvs = append(kvs, f.v)
				case 9:
					return ids(tid[:], f.v, lpath+".trace_id")
				case 10:
					return ids(sid[:], f.v, lpath+".span_id")
				case 11:
					observed = int64(f.u)
				case 12:
					eventName = f.v
				}
				return nil
			}); err != nil {
				return err
			}
			if len(eventName) > 0 && string(eventName) != EvaluationEventName {
				return nil
			}
			var la evalAttrs
			if err := r.attrs(kvs, lpath, &la); err != nil {
				r.bad = append(r.bad, err)
				return nil
			}
			if len(eventName) == 0 && la.str[eaEventName] != EvaluationEventName {
				return nil
			}
			if ra == nil {
				ra = &evalAttrs{}
				if err := r.resource(res, "resource_logs["+strconv.Itoa(ri)+"].resource", ra); err != nil {
					return err
				}
			}
			if t == 0 {
				t = observed
			}
			r.dst = append(r.dst, evaluationOf(tid, sid, t, &la, ra))
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}
