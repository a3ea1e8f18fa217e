package schemas

import (
	"encoding/binary"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// protoDecoder walks one OTLP TracesData message.
type protoDecoder struct {
	mapper
	r, s, p int // current resource_spans, scope_spans and spans index, for error paths
	res     resourceVals
}

func (d *protoDecoder) init(names AttributeNames, lim Limits, dst []Span) {
	d.mapper.init(names, lim, dst)
}

func (d *protoDecoder) traces(b []byte) error {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed("resource_spans["+strconv.Itoa(d.r)+"]", reason)
		}
		b = b[n:]
		if reason := checkType(&f, tracesTypes[:]); reason != "" {
			return malformed("resource_spans["+strconv.Itoa(d.r)+"]", reason)
		}
		if f.num == 1 {
			if err := d.resourceSpans(f.v); err != nil {
				return err
			}
			d.r++
		}
	}
	return nil
}

func (d *protoDecoder) rsPath() string { return "resource_spans[" + strconv.Itoa(d.r) + "]" }

// deprecatedScopeSpans is ResourceSpans field 1000, the
// instrumentation_library_spans of OTLP before 0.15, read as scope_spans
// when a ResourceSpans has no scope_spans (as pdata's JSON reader does), so
// that spans from old SDKs are not silently lost.
const deprecatedScopeSpans = 1000

// resourceSpans reads the resource first, wherever it lies in the message,
// so that its attributes are known when the spans are read.
func (d *protoDecoder) resourceSpans(b []byte) error {
	d.res = resourceVals{}
	var scopeField protowire.Number = 2
	hasScopeSpans := false
	for rest := b; len(rest) > 0; {
		f, n, reason := nextField(rest)
		if n < 0 {
			return malformed(d.rsPath(), reason)
		}
		rest = rest[n:]
		if reason := checkType(&f, resourceSpansTypes[:]); reason != "" {
			return malformed(d.rsPath()+"."+fieldName(resourceSpansNames[:], f.num), reason)
		}
		switch f.num {
		case 1:
			if err := d.resource(f.v); err != nil {
				return err
			}
		case 2:
			hasScopeSpans = true
		case deprecatedScopeSpans:
			if f.typ != protowire.BytesType {
				return malformed(d.rsPath()+".instrumentation_library_spans", "wrong wire type "+wireTypeNames[f.typ&7]+", want bytes")
			}
		}
	}
	if !hasScopeSpans {
		scopeField = deprecatedScopeSpans
	}
	d.s = 0
	for rest := b; len(rest) > 0; {
		f, n, _ := nextField(rest) // checked by the first pass
		rest = rest[n:]
		if f.num == scopeField {
			if err := d.scopeSpans(f.v); err != nil {
				return err
			}
			d.s++
		}
	}
	return nil
}

func (d *protoDecoder) resource(b []byte) error {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(resourcePath(d.r), reason)
		}
		b = b[n:]
		if reason := checkType(&f, resourceTypes[:]); reason != "" {
			return malformed(resourcePath(d.r)+"."+fieldName(resourceNames[:], f.num), reason)
		}
		if f.num == 1 {
			d.res.attrs++
			if d.res.attrs > d.lim.MaxAttributesPerSpan {
				return tooLargeLimit(resourcePath(d.r)+".attributes", "max_attributes_per_span", d.res.attrs, d.lim.MaxAttributesPerSpan, "attributes (at least)")
			}
			var v attrVal
			hit, _, err := d.keyValue(f.v, resourceScope, &v, resourcePath, d.res.attrs-1)
			if err != nil {
				return err
			}
			if hit != 0 {
				d.resourceAttr(&d.res, hit, &v)
			}
		}
	}
	return nil
}

func (d *protoDecoder) scopePath() string {
	return d.rsPath() + ".scope_spans[" + strconv.Itoa(d.s) + "]"
}

func (d *protoDecoder) scopeSpans(b []byte) error {
	d.p = 0
	if err := d.scopeName(b); err != nil {
		return err
	}
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(d.scopePath(), reason)
		}
		b = b[n:]
		if reason := checkType(&f, scopeSpansTypes[:]); reason != "" {
			return malformed(d.scopePath()+"."+fieldName(scopeSpansNames[:], f.num), reason)
		}
		if f.num == 2 {
			if err := d.span(f.v); err != nil {
				return err
			}
			d.p++
		}
	}
	return nil
}

// scopeName sets d.scope to the name of the ScopeSpans' instrumentation
// scope, wherever the scope lies in b (exporters write it first: that case
// reads one field). Damage in the scope's other fields goes unnoticed.
func (d *protoDecoder) scopeName(b []byte) error {
	d.setScope("")
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(d.scopePath(), reason)
		}
		b = b[n:]
		if f.num != 1 || f.typ != protowire.BytesType {
			continue // checked by the caller's walk
		}
		for sc := f.v; len(sc) > 0; {
			g, m, reason := nextField(sc)
			if m < 0 {
				return malformed(d.scopePath()+".scope", reason)
			}
			sc = sc[m:]
			if g.num != 1 {
				continue
			}
			if g.typ != protowire.BytesType {
				return malformed(d.scopePath()+".scope.name", "wrong wire type "+wireTypeNames[g.typ&7]+", want bytes")
			}
			if len(g.v) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.scopePath()+".scope.name", "max_string_bytes", len(g.v), d.lim.MaxStringBytes, "bytes")
			}
			name, ok := scopeOf(g.v)
			if !ok {
				d.stats.InvalidScopeNames++
			}
			d.setScope(name)
		}
	}
	return nil
}

func (d *protoDecoder) spanPath() string { return spanPath(d.r, d.s, d.p) }

func (d *protoDecoder) span(b []byte) error {
	d.stats.SpansSeen++
	if d.stats.SpansSeen > d.lim.MaxSpansPerMessage {
		return tooLargeLimit(d.scopePath()+".spans", "max_spans_per_message", d.stats.SpansSeen, d.lim.MaxSpansPerMessage, "spans (at least)")
	}
	d.dst = append(d.dst, Span{Scope: d.mapper.scope})
	sp := &d.dst[len(d.dst)-1]
	var st spanState
	for len(b) > 0 {
		// Fast paths for the fields every span has, in their usual encoding;
		// anything else takes the general path below.
		if len(b) >= 10 {
			switch b[0] {
			case 0x4a: // attributes (9, LEN) shorter than 128 bytes: the bulk of a span
				if l := int(b[1]); l < 0x80 && l < len(b)-1 {
					if err := d.spanAttrField(sp, &st, b[2:2+l]); err != nil {
						return err
					}
					b = b[2+l:]
					continue
				}
			case 0x0a: // trace_id (1, LEN) of 16 bytes
				if b[1] == 16 && len(b) >= 18 {
					copy(sp.TraceID[:], b[2:18])
					b = b[18:]
					continue
				}
			case 0x12: // span_id (2, LEN) of 8 bytes
				if b[1] == 8 {
					copy(sp.SpanID[:], b[2:10])
					b = b[10:]
					continue
				}
			case 0x39: // start_time_unix_nano (7, fixed64)
				sp.StartUnixNano = int64(binary.LittleEndian.Uint64(b[1:9]))
				b = b[9:]
				continue
			case 0x41: // end_time_unix_nano (8, fixed64)
				sp.EndUnixNano = int64(binary.LittleEndian.Uint64(b[1:9]))
				b = b[9:]
				continue
			case 0x30: // kind (6, varint) of one byte
				if b[1] < 0x80 {
					b = b[2:]
					continue
				}
			case 0x2a: // name (5, LEN) shorter than 128 bytes
				if l := int(b[1]); l < 0x80 && l < len(b)-1 && l <= d.lim.MaxStringBytes {
					st.name = b[2 : 2+l]
					b = b[2+l:]
					continue
				}
			}
		}
		num, typ, n := consumeTag(b)
		if n < 0 {
			return malformed(d.spanPath(), "bad tag: "+protowire.ParseError(n).Error())
		}
		b = b[n:]
		if num == 9 && typ == protowire.BytesType {
			kv, m := consumeLen(b)
			if m < 0 {
				return malformed(d.spanPath()+".attributes", "bad length: "+lenReason(m))
			}
			b = b[m:]
			if err := d.spanAttrField(sp, &st, kv); err != nil {
				return err
			}
			continue
		}
		f := field{num: num, typ: typ}
		m, reason := readValue(&f, b)
		if m < 0 {
			return malformed(d.spanPath()+"."+fieldName(spanNames[:], num), reason)
		}
		b = b[m:]
		if reason := checkType(&f, spanTypes[:]); reason != "" {
			return malformed(d.spanPath()+"."+fieldName(spanNames[:], f.num), reason)
		}
		switch f.num {
		case 1:
			switch len(f.v) {
			case 16:
				copy(sp.TraceID[:], f.v)
			case 0:
				sp.TraceID = TraceID{}
			default:
				return malformed(d.spanPath()+".trace_id", "want 16 bytes, got "+strconv.Itoa(len(f.v)))
			}
		case 2:
			switch len(f.v) {
			case 8:
				copy(sp.SpanID[:], f.v)
			case 0:
				sp.SpanID = SpanID{}
			default:
				return malformed(d.spanPath()+".span_id", "want 8 bytes, got "+strconv.Itoa(len(f.v)))
			}
		case 5:
			if len(f.v) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.spanPath()+".name", "max_string_bytes", len(f.v), d.lim.MaxStringBytes, "bytes")
			}
			st.name = f.v
		case 7:
			sp.StartUnixNano = int64(f.u)
		case 8:
			sp.EndUnixNano = int64(f.u)
		case 11:
			if err := d.event(&st, f.v); err != nil {
				return err
			}
		case 15:
			if err := d.status(sp, f.v); err != nil {
				return err
			}
		}
	}
	if bad, onResource := d.finishSpan(&st, &d.res); bad != nil {
		d.rejectSpan(bad, onResource, d.r, d.s, d.p)
	}
	return nil
}

// spanAttrField reads one KeyValue of the span's attributes.
func (d *protoDecoder) spanAttrField(sp *Span, st *spanState, kv []byte) error {
	st.attrs++
	if st.attrs > d.lim.MaxAttributesPerSpan {
		return tooLargeLimit(d.spanPath()+".attributes", "max_attributes_per_span", st.attrs, d.lim.MaxAttributesPerSpan, "attributes (at least)")
	}
	// Fast path (splitKV, match, quickValue by hand): a short key and value.
	if len(kv) >= 4 && kv[1] < 0x80 {
		l1 := 2 + int(kv[1])
		if l1+2 <= len(kv) {
			r := kv[l1:]
			if r[1] < 0x80 && 2+int(r[1]) == len(r) {
				var key, val []byte
				switch {
				case kv[0] == 0x0a && r[0] == 0x12:
					key, val = kv[2:l1], r[2:]
				case kv[0] == 0x12 && r[0] == 0x0a:
					key, val = r[2:], kv[2:l1]
				}
				if key != nil && len(key) <= d.lim.MaxStringBytes {
					hit := d.m.match(key, spanScope)
					if hit == 0 && len(val) <= d.lim.MaxStringBytes {
						st.noteKey(key)
						return nil
					}
					var v attrVal
					if hit != 0 && quickValue(val, &v, d.lim.MaxStringBytes) {
						d.spanAttr(sp, st, hit, &v)
						return nil
					}
				}
			}
		}
	}
	var v attrVal
	hit, key, err := d.keyValue(kv, spanScope, &v, nil, st.attrs-1)
	if err != nil {
		return err
	}
	if hit != 0 {
		d.spanAttr(sp, st, hit, &v)
	} else {
		st.noteKey(key)
	}
	return nil
}

// event reads a span event's time and name (Event: time_unix_nano = 1,
// name = 2, attributes = 3, dropped_attributes_count = 4): the
// first-token events give the TTFT. Its attributes are skipped unread.
func (d *protoDecoder) event(st *spanState, b []byte) error {
	var t int64
	var name []byte
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(d.eventPath(st), reason)
		}
		b = b[n:]
		if reason := checkType(&f, eventTypes[:]); reason != "" {
			return malformed(d.eventPath(st)+"."+fieldName(eventNames[:], f.num), reason)
		}
		switch f.num {
		case 1:
			t = int64(f.u)
		case 2:
			if len(f.v) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.eventPath(st)+".name", "max_string_bytes", len(f.v), d.lim.MaxStringBytes, "bytes")
			}
			name = f.v
		}
	}
	st.noteEvent(name, t)
	st.lib.events++
	return nil
}

func (d *protoDecoder) eventPath(st *spanState) string {
	return d.spanPath() + ".events[" + strconv.Itoa(st.lib.events) + "]"
}

func (d *protoDecoder) status(sp *Span, b []byte) error {
	for len(b) > 0 {
		f, n, reason := nextField(b)
		if n < 0 {
			return malformed(d.spanPath()+".status", reason)
		}
		b = b[n:]
		if reason := checkType(&f, statusTypes[:]); reason != "" {
			return malformed(d.spanPath()+".status."+fieldName(statusNames[:], f.num), reason)
		}
		switch f.num {
		case 2:
			if len(f.v) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.spanPath()+".status.message", "max_string_bytes", len(f.v), d.lim.MaxStringBytes, "bytes")
			}
		case 3:
			sp.Error = f.u == statusCodeError
		}
	}
	return nil
}

// keyValue reads one KeyValue at index i of a span's (resourcePathFn == nil)
// or the resource's attribute list. It returns the mapped attributes the key
// names within scope and, for those, the value in v. The value of an unmapped
// key is not parsed, unless it is longer than max_string_bytes (then its
// top-level string is checked against that limit). It returns the key too.
func (d *protoDecoder) keyValue(b []byte, scope uint64, v *attrVal, resourcePathFn func(int) string, i int) (uint64, []byte, error) {
	key, val, ok := splitKV(b)
	if !ok {
		var err error
		if key, val, err = d.keyValueSlow(b, resourcePathFn, i); err != nil {
			return 0, nil, err
		}
	}
	if len(key) > d.lim.MaxStringBytes {
		return 0, nil, tooLargeLimit(d.attrPath(resourcePathFn, i, ".key"), "max_string_bytes", len(key), d.lim.MaxStringBytes, "bytes")
	}
	hit := d.m.match(key, scope)
	if hit == 0 && len(val) <= d.lim.MaxStringBytes {
		return 0, key, nil
	}
	if hit != 0 && quickValue(val, v, d.lim.MaxStringBytes) {
		return hit, key, nil
	}
	if p, sub := parseAnyValue(val, v, hit != 0, d.lim.MaxStringBytes); p.kind != nil {
		return 0, nil, wrap(p.kind, &FieldError{Field: d.attrPath(resourcePathFn, i, ".value"+sub), Reason: p.reason})
	}
	return hit, key, nil
}

// keyValueSlow splits a KeyValue in any encoding into its key and value.
func (d *protoDecoder) keyValueSlow(b []byte, resourcePathFn func(int) string, i int) (key, val []byte, err error) {
	for len(b) > 0 {
		num, typ, n := consumeTag(b)
		if n < 0 {
			return nil, nil, malformed(d.attrPath(resourcePathFn, i, ""), "bad tag: "+protowire.ParseError(n).Error())
		}
		b = b[n:]
		if typ == protowire.BytesType && (num == 1 || num == 2) {
			x, m := consumeLen(b)
			if m < 0 {
				return nil, nil, malformed(d.attrPath(resourcePathFn, i, "."+keyValueNames[num]), "bad length: "+lenReason(m))
			}
			b = b[m:]
			if num == 1 {
				key = x
			} else if len(x) > 0 || val == nil {
				val = x // a repeated value merges: an empty one changes nothing
			}
			continue
		}
		f := field{num: num, typ: typ}
		m, reason := readValue(&f, b)
		if m < 0 {
			return nil, nil, malformed(d.attrPath(resourcePathFn, i, "."+fieldName(keyValueNames[:], num)), reason)
		}
		b = b[m:]
		if reason := checkType(&f, keyValueTypes[:]); reason != "" {
			return nil, nil, malformed(d.attrPath(resourcePathFn, i, "."+fieldName(keyValueNames[:], f.num)), reason)
		}
	}
	return key, val, nil
}

// attrPath names attribute i of the current span, or of the current resource
// when resourcePathFn is set.
func (d *protoDecoder) attrPath(resourcePathFn func(int) string, i int, leaf string) string {
	base := d.spanPath()
	if resourcePathFn != nil {
		base = resourcePathFn(d.r)
	}
	return base + ".attributes[" + strconv.Itoa(i) + "]" + leaf
}
