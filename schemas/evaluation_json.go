package schemas

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// Reading gen_ai.evaluation.result events from OTLP/JSON (the protobuf JSON
// mapping the Collector's otlp_json encoding writes: lowerCamelCase keys,
// hex ids, 64-bit integers as strings or numbers). The same events, ids,
// times and attribute rules as the protobuf readers; evaluation messages
// are rare next to spans, so encoding/json is fast enough here.

type jsonKV struct {
	Key   string        `json:"key"`
	Value *jsonAnyValue `json:"value"`
}

type jsonAnyValue struct {
	StringValue *string         `json:"stringValue"`
	IntValue    json.RawMessage `json:"intValue"`
	DoubleValue json.RawMessage `json:"doubleValue"`
	BoolValue   *bool           `json:"boolValue"`
	ArrayValue  json.RawMessage `json:"arrayValue"`
	KvlistValue json.RawMessage `json:"kvlistValue"`
	BytesValue  json.RawMessage `json:"bytesValue"`
}

type jsonResource struct {
	Attributes []jsonKV `json:"attributes"`
}

type jsonEvalTraces struct {
	ResourceSpans []struct {
		Resource   jsonResource `json:"resource"`
		ScopeSpans []struct {
			Spans []struct {
				TraceID     string          `json:"traceId"`
				SpanID      string          `json:"spanId"`
				EndTimeNano json.RawMessage `json:"endTimeUnixNano"`
				Attributes  []jsonKV        `json:"attributes"`
				Events      []jsonEvalEvent `json:"events"`
			} `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type jsonEvalEvent struct {
	TimeUnixNano json.RawMessage `json:"timeUnixNano"`
	Name         string          `json:"name"`
	Attributes   []jsonKV        `json:"attributes"`
}

type jsonEvalLogs struct {
	ResourceLogs []struct {
		Resource  jsonResource `json:"resource"`
		ScopeLogs []struct {
			LogRecords []struct {
				TimeUnixNano     json.RawMessage `json:"timeUnixNano"`
				ObservedUnixNano json.RawMessage `json:"observedTimeUnixNano"`
				EventName        string          `json:"eventName"`
				TraceID          string          `json:"traceId"`
				SpanID           string          `json:"spanId"`
				Attributes       []jsonKV        `json:"attributes"`
			} `json:"logRecords"`
		} `json:"scopeLogs"`
	} `json:"resourceLogs"`
}

// jsonUint64 reads an OTLP/JSON 64-bit integer: a string or a number.
func jsonUint64(raw json.RawMessage, path string) (uint64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	s := string(bytes.Trim(raw, `"`))
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, malformed(path, "not an unsigned 64-bit integer: "+strconv.Quote(s))
	}
	return u, nil
}

// jsonIDs reads the traceId and spanId of the span or log record at path.
func jsonIDs(traceID, spanID, path string) (tid TraceID, sid SpanID, err error) {
	if err = jsonID(tid[:], traceID, path+".trace_id"); err == nil {
		err = jsonID(sid[:], spanID, path+".span_id")
	}
	return tid, sid, err
}

func jsonID(dst []byte, s, path string) error {
	if s == "" {
		return nil
	}
	if len(s) != 2*len(dst) {
		return malformed(path, "want "+strconv.Itoa(2*len(dst))+" hex characters, got "+strconv.Itoa(len(s)))
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return malformed(path, "not hex: "+err.Error())
	}
	return nil
}

// jsonAttrs is evalReader.attrs for OTLP/JSON attribute lists.
func (r *evalReader) jsonAttrs(kvs []jsonKV, path string, a *evalAttrs) error {
	for _, kv := range kvs {
		if len(kv.Key) > r.lim.MaxStringBytes {
			return tooLargeLimit(path+".attributes", "max_string_bytes", len(kv.Key), r.lim.MaxStringBytes, "bytes")
		}
		id := -1
		for j := range r.names {
			if r.names[j] == kv.Key {
				id = j
				break
			}
		}
		if id < 0 || a.has&(1<<id) != 0 || kv.Value == nil {
			continue
		}
		v := kv.Value
		fpath := path + ".attributes[" + r.names[id] + "]"
		kind := "empty"
		switch {
		case v.StringValue != nil:
			kind = "string"
		case len(v.IntValue) > 0:
			kind = "int"
		case len(v.DoubleValue) > 0:
			kind = "double"
		case v.BoolValue != nil:
			kind = "bool"
		case len(v.ArrayValue) > 0:
			kind = "array"
		case len(v.KvlistValue) > 0:
			kind = "kvlist"
		case len(v.BytesValue) > 0:
			kind = "bytes"
		}
		if kind == "empty" {
			continue
		}
		bad := func(want string) error {
			return wrap(ErrInvalid, &FieldError{Field: fpath, Reason: "want " + want + ", got " + kind})
		}
		switch {
		case id == eaScore:
			switch kind {
			case "double":
				f, err := jsonDouble(v.DoubleValue)
				if err != nil {
					return malformed(fpath, err.Error())
				}
				a.score = f
			case "int":
				i, err := jsonInt64(v.IntValue)
				if err != nil {
					return malformed(fpath, err.Error())
				}
				a.score = float64(i)
			default:
				return bad("a double or an int")
			}
		case kind == "string":
			s := *v.StringValue
			if len(s) > r.lim.MaxStringBytes {
				return tooLargeLimit(fpath, "max_string_bytes", len(s), r.lim.MaxStringBytes, "bytes")
			}
			if !utf8.ValidString(s) {
				return wrap(ErrMalformed, &FieldError{Field: fpath, Reason: "string is not valid UTF-8"})
			}
			a.str[id] = s
		case kind == "int" && id != eaExplanation:
			i, err := jsonInt64(v.IntValue)
			if err != nil {
				return malformed(fpath, err.Error())
			}
			a.str[id] = strconv.FormatInt(i, 10)
		default:
			return bad("a string")
		}
		a.has |= 1 << id
	}
	return nil
}

func jsonInt64(raw json.RawMessage) (int64, error) {
	s := string(bytes.Trim(raw, `"`))
	return strconv.ParseInt(s, 10, 64)
}

func jsonDouble(raw json.RawMessage) (float64, error) {
	switch string(raw) {
	case `"NaN"`:
		return math.NaN(), nil
	case `"Infinity"`:
		return math.Inf(1), nil
	case `"-Infinity"`:
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(string(bytes.Trim(raw, `"`)), 64)
}

// DecodeOTLPJSONSpanEvaluations is DecodeOTLPSpanEvaluations for OTLP/JSON.
func DecodeOTLPJSONSpanEvaluations(msg []byte, names AttributeNames, lim Limits, dst []Evaluation) ([]Evaluation, error) {
	var r evalReader
	if err := r.start(msg, names, lim, dst); err != nil {
		return dst, err
	}
	var td jsonEvalTraces
	if err := json.Unmarshal(msg, &td); err != nil {
		return dst, malformed("traces_data", err.Error())
	}
	for ri, rs := range td.ResourceSpans {
		var ra *evalAttrs
		for si, ss := range rs.ScopeSpans {
			for pi, sp := range ss.Spans {
				path := spanPath(ri, si, pi)
				tid, sid, err := jsonIDs(sp.TraceID, sp.SpanID, path)
				if err != nil {
					return dst, err
				}
				end, err := jsonUint64(sp.EndTimeNano, path+".end_time_unix_nano")
				if err != nil {
					return dst, err
				}
				var sa *evalAttrs
				for ei, ev := range sp.Events {
					if ev.Name != EvaluationEventName {
						continue
					}
					epath := path + ".events[" + strconv.Itoa(ei) + "]"
					t, err := jsonUint64(ev.TimeUnixNano, epath+".time_unix_nano")
					if err != nil {
						return dst, err
					}
					var ea evalAttrs
					if err := r.jsonAttrs(ev.Attributes, epath, &ea); err != nil {
						r.bad = append(r.bad, err)
						continue
					}
					if sa == nil {
						sa = &evalAttrs{}
						if err := r.jsonAttrs(sp.Attributes, path, sa); err != nil {
							return dst, err
						}
					}
					if ra == nil {
						ra = &evalAttrs{}
						if err := r.jsonAttrs(rs.Resource.Attributes, resourcePath(ri), ra); err != nil {
							return dst, err
						}
					}
					if t == 0 {
						t = end
					}
					r.dst = append(r.dst, evaluationOf(tid, sid, int64(t), &ea, sa, ra))
				}
			}
		}
	}
	return r.result()
}

// DecodeOTLPJSONLogEvaluations is DecodeOTLPLogEvaluations for OTLP/JSON.
func DecodeOTLPJSONLogEvaluations(msg []byte, names AttributeNames, lim Limits, dst []Evaluation) ([]Evaluation, error) {
	var r evalReader
	if err := r.start(msg, names, lim, dst); err != nil {
		return dst, err
	}
	var ld jsonEvalLogs
	if err := json.Unmarshal(msg, &ld); err != nil {
		return dst, malformed("logs_data", err.Error())
	}
	for ri, rl := range ld.ResourceLogs {
		var ra *evalAttrs
		for si, sl := range rl.ScopeLogs {
			for li, lr := range sl.LogRecords {
				path := "resource_logs[" + strconv.Itoa(ri) + "].scope_logs[" + strconv.Itoa(si) + "].log_records[" + strconv.Itoa(li) + "]"
				if lr.EventName != "" && lr.EventName != EvaluationEventName {
					continue
				}
				var la evalAttrs
				if err := r.jsonAttrs(lr.Attributes, path, &la); err != nil {
					r.bad = append(r.bad, err)
					continue
				}
				if lr.EventName == "" && la.str[eaEventName] != EvaluationEventName {
					continue
				}
				tid, sid, err := jsonIDs(lr.TraceID, lr.SpanID, path)
				if err != nil {
					return dst, err
				}
				t, err := jsonUint64(lr.TimeUnixNano, path+".time_unix_nano")
				if err != nil {
					return dst, err
				}
				if t == 0 {
					if t, err = jsonUint64(lr.ObservedUnixNano, path+".observed_time_unix_nano"); err != nil {
						return dst, err
					}
				}
				if ra == nil {
					ra = &evalAttrs{}
					if err := r.jsonAttrs(rl.Resource.Attributes, "resource_logs["+strconv.Itoa(ri)+"].resource", ra); err != nil {
						return dst, err
					}
				}
				r.dst = append(r.dst, evaluationOf(tid, sid, int64(t), &la, ra))
			}
		}
	}
	return r.result()
}
