package schemas

import (
	"encoding/binary"
	"math"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// Low-level protobuf reading for the OTLP decoder: field tables, tag and
// value readers, and the fast paths for the encodings exporters write.

// The OTLP protobuf field numbers the decoder reads, from
// opentelemetry-proto's trace/v1/trace.proto, common/v1/common.proto and
// resource/v1/resource.proto (checked against pdata v1.71's generated code).
//
// Each table gives the wire type of every known field of one message, so a
// known field arriving with another wire type is malformed; numbers past the
// table, or with noType, are unknown fields and skipped.
const noType protowire.Type = -1

var (
	// TracesData: resource_spans = 1.
	tracesTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType}
	// ResourceSpans: resource = 1, scope_spans = 2, schema_url = 3.
	resourceSpansTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.BytesType}
	resourceSpansNames = [...]string{1: "resource", 2: "scope_spans", 3: "schema_url"}
	// Resource: attributes = 1, dropped_attributes_count = 2, entity_refs = 3.
	resourceTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType, 2: protowire.VarintType, 3: protowire.BytesType}
	resourceNames = [...]string{1: "attributes", 2: "dropped_attributes_count", 3: "entity_refs"}
	// ScopeSpans: scope = 1, spans = 2, schema_url = 3.
	scopeSpansTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.BytesType}
	scopeSpansNames = [...]string{1: "scope", 2: "spans", 3: "schema_url"}
	// Span.
	spanTypes = [...]protowire.Type{
		0:  noType,
		1:  protowire.BytesType,   // trace_id
		2:  protowire.BytesType,   // span_id
		3:  protowire.BytesType,   // trace_state
		4:  protowire.BytesType,   // parent_span_id
		5:  protowire.BytesType,   // name
		6:  protowire.VarintType,  // kind
		7:  protowire.Fixed64Type, // start_time_unix_nano
		8:  protowire.Fixed64Type, // end_time_unix_nano
		9:  protowire.BytesType,   // attributes
		10: protowire.VarintType,  // dropped_attributes_count
		11: protowire.BytesType,   // events
		12: protowire.VarintType,  // dropped_events_count
		13: protowire.BytesType,   // links
		14: protowire.VarintType,  // dropped_links_count
		15: protowire.BytesType,   // status
		16: protowire.Fixed32Type, // flags
	}
	spanNames = [...]string{1: "trace_id", 2: "span_id", 3: "trace_state", 4: "parent_span_id", 5: "name", 6: "kind",
		7: "start_time_unix_nano", 8: "end_time_unix_nano", 9: "attributes", 10: "dropped_attributes_count",
		11: "events", 12: "dropped_events_count", 13: "links", 14: "dropped_links_count", 15: "status", 16: "flags"}
	// Event: time_unix_nano = 1, name = 2, attributes = 3, dropped_attributes_count = 4.
	eventTypes = [...]protowire.Type{0: noType, 1: protowire.Fixed64Type, 2: protowire.BytesType, 3: protowire.BytesType, 4: protowire.VarintType}
	eventNames = [...]string{1: "time_unix_nano", 2: "name", 3: "attributes", 4: "dropped_attributes_count"}
	// Status: message = 2, code = 3 (1 is reserved: the removed deprecated_code).
	statusTypes = [...]protowire.Type{0: noType, 1: noType, 2: protowire.BytesType, 3: protowire.VarintType}
	statusNames = [...]string{2: "message", 3: "code"}
	// KeyValue: key = 1, value = 2, key_strindex = 3.
	keyValueTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType, 2: protowire.BytesType, 3: protowire.VarintType}
	keyValueNames = [...]string{1: "key", 2: "value", 3: "key_strindex"}
	// AnyValue: string = 1, bool = 2, int = 3, double = 4, array = 5, kvlist = 6,
	// bytes = 7, string_value_strindex = 8.
	anyValueTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType, 2: protowire.VarintType, 3: protowire.VarintType,
		4: protowire.Fixed64Type, 5: protowire.BytesType, 6: protowire.BytesType, 7: protowire.BytesType, 8: protowire.VarintType}
	anyValueNames = [...]string{1: "string_value", 2: "bool_value", 3: "int_value", 4: "double_value", 5: "array_value",
		6: "kvlist_value", 7: "bytes_value", 8: "string_value_strindex"}
	// ArrayValue: values = 1.
	arrayValueTypes = [...]protowire.Type{0: noType, 1: protowire.BytesType}
)

var wireTypeNames = [...]string{0: "varint", 1: "fixed64", 2: "bytes", 3: "start group", 4: "end group", 5: "fixed32", 6: "reserved 6", 7: "reserved 7"}

// field is one protobuf field record: a LEN payload in v, any other scalar in u.
type field struct {
	num protowire.Number
	typ protowire.Type
	v   []byte
	u   uint64
}

// consumeTag reads a field tag, taking the one-byte case (field numbers up
// to 15) without a call.
func consumeTag(b []byte) (protowire.Number, protowire.Type, int) {
	if len(b) > 0 && b[0] < 0x80 && b[0] >= 8 {
		return protowire.Number(b[0] >> 3), protowire.Type(b[0] & 7), 1
	}
	return protowire.ConsumeTag(b)
}

// consumeLen reads a LEN value, taking lengths up to 127 without a call.
func consumeLen(b []byte) ([]byte, int) {
	if len(b) > 0 && b[0] < 0x80 && int(b[0]) < len(b) {
		return b[1 : 1+int(b[0])], 1 + int(b[0])
	}
	return protowire.ConsumeBytes(b)
}

// nextField reads one field record from b. It returns the record and its
// length, or a negative length and a reason. Groups (which OTLP does not use)
// are skipped whole.
func nextField(b []byte) (f field, n int, reason string) {
	var tn int
	f.num, f.typ, tn = consumeTag(b)
	if tn < 0 {
		return f, tn, "bad tag: " + protowire.ParseError(tn).Error()
	}
	m, reason := readValue(&f, b[tn:])
	if m < 0 {
		return f, m, reason
	}
	return f, tn + m, ""
}

// readValue reads the value of a field whose tag is in f from b, returning
// its length, or a negative length and a reason.
func readValue(f *field, b []byte) (int, string) {
	var m int
	switch f.typ {
	case protowire.BytesType:
		if f.v, m = consumeLen(b); m < 0 {
			return m, "bad length: " + lenReason(m)
		}
		return m, ""
	case protowire.VarintType:
		if len(b) > 0 && b[0] < 0x80 {
			f.u, m = uint64(b[0]), 1
		} else {
			f.u, m = protowire.ConsumeVarint(b)
		}
	case protowire.Fixed64Type:
		f.u, m = protowire.ConsumeFixed64(b)
	case protowire.Fixed32Type:
		var u uint32
		u, m = protowire.ConsumeFixed32(b)
		f.u = uint64(u)
	default:
		m = protowire.ConsumeFieldValue(f.num, f.typ, b)
	}
	if m < 0 {
		return m, "bad " + wireTypeNames[f.typ&7] + " value: " + protowire.ParseError(m).Error()
	}
	return m, ""
}

func lenReason(m int) string {
	if err := protowire.ParseError(m); err.Error() != "unexpected EOF" {
		return err.Error()
	}
	return "length past the end of the message"
}

// checkType reports a reason when field f of a message described by types
// has the wrong wire type.
func checkType(f *field, types []protowire.Type) string {
	if int(f.num) < len(types) && types[f.num] != noType && types[f.num] != f.typ {
		return "wrong wire type " + wireTypeNames[f.typ&7] + ", want " + wireTypeNames[types[f.num]&7]
	}
	return ""
}

// fieldName names field num of a message for error paths.
func fieldName(names []string, num protowire.Number) string {
	if int(num) < len(names) && names[num] != "" {
		return names[num]
	}
	return "field " + strconv.Itoa(int(num))
}

// splitKV is the fast path for a KeyValue of a key and a value each shorter
// than 128 bytes, in either order: most exporters write the key first, the
// Collector's pdata writes the value first.
func splitKV(b []byte) (key, val []byte, ok bool) {
	if len(b) < 4 || b[1] >= 0x80 {
		return nil, nil, false
	}
	l1 := 2 + int(b[1])
	if l1+2 > len(b) {
		return nil, nil, false
	}
	r := b[l1:]
	if r[1] >= 0x80 || 2+int(r[1]) != len(r) {
		return nil, nil, false
	}
	switch {
	case b[0] == 0x0a && r[0] == 0x12: // key (1, LEN), value (2, LEN)
		return b[2:l1], r[2:], true
	case b[0] == 0x12 && r[0] == 0x0a:
		return r[2:], b[2:l1], true
	}
	return nil, nil, false
}

// quickValue is the fast path for an AnyValue holding one short string, an
// int, a double, or an array of one short string; it reports false for
// anything else, which parseAnyValue then reads.
func quickValue(b []byte, v *attrVal, maxStr int) bool {
	if len(b) < 2 {
		return false
	}
	switch b[0] {
	case 0x0a: // string_value, LEN
		if b[1] < 0x80 && 2+int(b[1]) == len(b) && int(b[1]) <= maxStr {
			v.kind, v.str = kindString, b[2:]
			return true
		}
	case 0x18: // int_value, varint
		if u, n := protowire.ConsumeVarint(b[1:]); n == len(b)-1 {
			v.kind, v.i = kindInt, int64(u)
			return true
		}
	case 0x21: // double_value, fixed64
		if len(b) == 9 {
			v.kind, v.f = kindDouble, math.Float64frombits(binary.LittleEndian.Uint64(b[1:]))
			return true
		}
	case 0x2a: // array_value, LEN, holding one short string (finish reasons)
		if b[1] >= 0x80 || 2+int(b[1]) != len(b) || len(b) < 6 || b[2] != 0x0a || b[3] >= 0x80 || 4+int(b[3]) != len(b) {
			return false
		}
		if e := b[4:]; e[0] == 0x0a && e[1] < 0x80 && 2+int(e[1]) == len(e) && int(e[1]) <= maxStr {
			v.kind, v.hasFirst, v.firstKind, v.firstStr = kindArray, true, kindString, e[2:]
			return true
		}
	}
	return false
}

// parseAnyValue reads an AnyValue into v. With array set it also reads the
// first element of an array value (not deeper). It checks top-level string
// and bytes values against maxStr. On failure it returns the problem and the
// sub-path of the offending field.
func parseAnyValue(b []byte, v *attrVal, array bool, maxStr int) (problem, string) {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return problem{ErrMalformed, reason}, ""
		}
		b = b[n:]
		if p, sub := setAnyValueField(v, &f, maxStr); p.kind != nil {
			return p, sub
		}
		if f.num == 5 && array {
			if p, sub := parseFirst(f.v, v, maxStr); p.kind != nil {
				return p, ".array_value" + sub
			}
		}
	}
	return problem{}, ""
}

// setAnyValueField applies one field of an AnyValue to v. An array value is
// only marked as such: its elements are for parseFirst.
func setAnyValueField(v *attrVal, f *field, maxStr int) (problem, string) {
	if reason := checkType(f, anyValueTypes[:]); reason != "" {
		return problem{ErrMalformed, reason}, "." + fieldName(anyValueNames[:], f.num)
	}
	switch f.num {
	case 1, 7:
		if len(f.v) > maxStr {
			return problem{ErrTooLarge, strconv.Itoa(len(f.v)) + " bytes exceeds max_string_bytes = " + strconv.Itoa(maxStr)}, "." + anyValueNames[f.num]
		}
		v.kind, v.str = kindString, f.v
		if f.num == 7 {
			v.kind = kindBytes
		}
	case 2:
		v.kind, v.i = kindBool, 0
		if f.u != 0 {
			v.i = 1
		}
	case 3:
		v.kind, v.i = kindInt, int64(f.u)
	case 4:
		v.kind, v.f = kindDouble, math.Float64frombits(f.u)
	case 5:
		v.kind, v.hasFirst = kindArray, false
	case 6:
		v.kind = kindKvlist
	case 8:
		v.kind = kindEmpty
	}
	return problem{}, ""
}

// parseFirst reads the first element of an ArrayValue into v (not deeper);
// the others are skipped by their length.
func parseFirst(b []byte, v *attrVal, maxStr int) (problem, string) {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return problem{ErrMalformed, reason}, ""
		}
		b = b[n:]
		if reason := checkType(&f, arrayValueTypes[:]); reason != "" {
			return problem{ErrMalformed, reason}, ".values"
		}
		if f.num != 1 || v.hasFirst {
			continue
		}
		var e attrVal
		for elem := f.v; len(elem) > 0; {
			ef, n, reason := nextField(elem)
			if n < 0 {
				return problem{ErrMalformed, reason}, ".values[0]"
			}
			elem = elem[n:]
			if p, sub := setAnyValueField(&e, &ef, maxStr); p.kind != nil {
				return p, ".values[0]" + sub
			}
		}
		v.hasFirst, v.firstKind, v.firstStr, v.firstI = true, e.kind, e.str, e.i
	}
	return problem{}, ""
}
