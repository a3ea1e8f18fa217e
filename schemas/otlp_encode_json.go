package schemas

import (
	"encoding/hex"
	"math"
	"strconv"
)

// EncodeOTLPJSON is EncodeOTLPProto for OTLP/JSON: the same layout, written as
// the OTLP/JSON mapping specifies (lowerCamelCase keys, hex ids, 64-bit
// integers as decimal strings, enums as integers).
func EncodeOTLPJSON(dst []byte, spans []Span, names AttributeNames) []byte {
	names = names.withDefaults()
	dst = append(dst, `{"resourceSpans":[`...)
	for gi, g := range groupByService(spans) {
		if gi > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		if g.service != "" {
			dst = append(dst, `"resource":{"attributes":[`...)
			dst = appendJSONKV(dst, "service.name", attrVal{kind: kindString}, g.service)
			dst = append(dst, "]},"...)
		}
		dst = append(dst, `"scopeSpans":[{"scope":{`...)
		if g.scope != "" {
			dst = append(dst, `"name":`...)
			dst = AppendJSONString(dst, g.scope)
		}
		dst = append(dst, `},"spans":[`...)
		for si, i := range g.spans {
			if si > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONSpan(dst, &spans[i], &names)
		}
		dst = append(dst, "]}]}"...)
	}
	return append(dst, "]}"...)
}

func appendJSONSpan(b []byte, sp *Span, n *AttributeNames) []byte {
	b = append(b, `{"traceId":"`...)
	b = hex.AppendEncode(b, sp.TraceID[:])
	b = append(b, `","spanId":"`...)
	b = hex.AppendEncode(b, sp.SpanID[:])
	b = append(b, '"')
	if name := spanName(sp); name != "" {
		b = append(b, `,"name":`...)
		b = AppendJSONString(b, name)
	}
	b = append(b, `,"kind":`...)
	b = strconv.AppendInt(b, otlpSpanKindClient, 10)
	b = append(b, `,"startTimeUnixNano":"`...)
	b = strconv.AppendUint(b, uint64(sp.StartUnixNano), 10)
	b = append(b, `","endTimeUnixNano":"`...)
	b = strconv.AppendUint(b, uint64(sp.EndUnixNano), 10)
	b = append(b, `","attributes":[`...)
	var buf [24]encAttr
	for i, a := range spanAttrs(sp, n, buf[:0]) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONKV(b, a.key, a.v, a.s)
	}
	b = append(b, ']')
	if sp.Error {
		b = append(b, `,"status":{"code":`...)
		b = strconv.AppendInt(b, statusCodeError, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendJSONKV(b []byte, key string, v attrVal, s string) []byte {
	b = append(b, `{"key":`...)
	b = AppendJSONString(b, key)
	b = append(b, `,"value":`...)
	b = appendJSONValue(b, v, s)
	return append(b, '}')
}

func appendJSONValue(b []byte, v attrVal, s string) []byte {
	switch v.kind {
	case kindString:
		b = append(b, `{"stringValue":`...)
		b = AppendJSONString(b, s)
	case kindBool:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.i != 0)
	case kindInt:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.i, 10)
		b = append(b, '"')
	case kindDouble:
		b = append(b, `{"doubleValue":`...)
		b = appendJSONDouble(b, v.f)
	case kindArray:
		b = append(b, `{"arrayValue":{"values":[`...)
		b = appendJSONValue(b, attrVal{kind: kindString}, s)
		b = append(b, "]}"...)
	default:
		b = append(b, '{')
	}
	return append(b, '}')
}

// appendJSONDouble writes f as the shortest number that parses back to the
// same bits, or as "NaN", "Infinity", "-Infinity", which JSON numbers cannot
// express.
func appendJSONDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
