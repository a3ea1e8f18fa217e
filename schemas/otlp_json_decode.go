package schemas

import "strconv"

// jsonDecoder walks one OTLP/JSON TracesData text.
type jsonDecoder struct {
	mapper
	r          jsonReader
	ri, si, pi int // current resource_spans, scope_spans and spans index, for error paths
	ai         int // current attribute index
	inResource bool
	res        resourceVals
	pending    []int // offsets of scopeSpans arrays met before their resource
	deprecated []int // offsets of instrumentationLibrarySpans arrays
	valBuf     []byte
	firstBuf   []byte
	elem       attrVal // the first element of an array value being read
	name       []byte  // the current span's name (copied: see spanField)
	evName     []byte  // the current event's name (copied: later strings reuse the scratch)
}

func (d *jsonDecoder) init(names AttributeNames, lim Limits, dst []Span, msg []byte) {
	d.mapper.init(names, lim, dst)
	d.r.b = msg
}

// syntax wraps a reader error as malformed at path.
func syntax(path string, err error) error {
	return malformed(path, err.Error())
}

func (d *jsonDecoder) rsPath() string { return "resource_spans[" + strconv.Itoa(d.ri) + "]" }
func (d *jsonDecoder) scopePath() string {
	return d.rsPath() + ".scope_spans[" + strconv.Itoa(d.si) + "]"
}
func (d *jsonDecoder) spanPath() string { return spanPath(d.ri, d.si, d.pi) }
func (d *jsonDecoder) attrPath(leaf string) string {
	base := d.spanPath()
	if d.inResource {
		base = resourcePath(d.ri)
	}
	return base + ".attributes[" + strconv.Itoa(d.ai) + "]" + leaf
}

func (d *jsonDecoder) traces() error {
	r := &d.r
	if err := r.open('{'); err != nil {
		return syntax("message", err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax("message", err)
		}
		if !more {
			break
		}
		switch string(k) {
		case "resourceSpans", "resource_spans":
			if r.null() {
				continue
			}
			if err := r.open('['); err != nil {
				return syntax("resource_spans", err)
			}
			for first := true; ; first = false {
				more, err := r.more(first, ']')
				if err != nil {
					return syntax(d.rsPath(), err)
				}
				if !more {
					break
				}
				if err := d.resourceSpans(); err != nil {
					return err
				}
				d.ri++
			}
		default:
			if err := r.skip(); err != nil {
				return syntax("message", err)
			}
		}
	}
	if err := r.end(); err != nil {
		return syntax("message", err)
	}
	return nil
}

// resourceSpans reads one ResourceSpans object. Scope spans that come before
// the resource are read after it, so that its attributes are known.
func (d *jsonDecoder) resourceSpans() error {
	r := &d.r
	d.res = resourceVals{}
	d.si = 0
	if r.null() {
		return nil
	}
	if err := r.open('{'); err != nil {
		return syntax(d.rsPath(), err)
	}
	sawResource, sawScopeSpans := false, false
	d.pending, d.deprecated = d.pending[:0], d.deprecated[:0]
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(d.rsPath(), err)
		}
		if !more {
			break
		}
		switch string(k) {
		case "resource":
			if err := d.resource(); err != nil {
				return err
			}
			sawResource = true
		case "instrumentationLibrarySpans", "instrumentation_library_spans":
			// OTLP before 0.15: read as scopeSpans when there are none, as
			// pdata does, so that spans from old SDKs are not silently lost.
			r.ws()
			d.deprecated = append(d.deprecated, r.i)
			if err := r.skip(); err != nil {
				return syntax(d.rsPath()+".instrumentation_library_spans", err)
			}
		case "scopeSpans", "scope_spans":
			sawScopeSpans = true
			if sawResource {
				if err := d.scopeSpansArray(); err != nil {
					return err
				}
				continue
			}
			r.ws()
			d.pending = append(d.pending, r.i)
			if err := r.skip(); err != nil {
				return syntax(d.rsPath()+".scope_spans", err)
			}
		default:
			if err := r.skip(); err != nil {
				return syntax(d.rsPath(), err)
			}
		}
	}
	if !sawScopeSpans {
		d.pending = append(d.pending, d.deprecated...)
	}
	if len(d.pending) > 0 {
		end, depth := r.i, r.depth
		for _, off := range d.pending {
			r.i = off
			if err := d.scopeSpansArray(); err != nil {
				return err
			}
		}
		r.i, r.depth = end, depth
	}
	return nil
}

func (d *jsonDecoder) resource() error {
	r := &d.r
	if r.null() {
		return nil
	}
	if err := r.open('{'); err != nil {
		return syntax(resourcePath(d.ri), err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(resourcePath(d.ri), err)
		}
		if !more {
			return nil
		}
		if string(k) != "attributes" {
			if err := r.skip(); err != nil {
				return syntax(resourcePath(d.ri), err)
			}
			continue
		}
		d.inResource = true
		if err := d.attributes(&d.res.attrs, nil, nil); err != nil {
			return err
		}
		d.inResource = false
	}
}

// scopeSpansArray reads an array of ScopeSpans.
func (d *jsonDecoder) scopeSpansArray() error {
	r := &d.r
	if r.null() {
		return nil
	}
	if err := r.open('['); err != nil {
		return syntax(d.rsPath()+".scope_spans", err)
	}
	for first := true; ; first = false {
		more, err := r.more(first, ']')
		if err != nil {
			return syntax(d.scopePath(), err)
		}
		if !more {
			return nil
		}
		if err := d.scopeSpans(); err != nil {
			return err
		}
		d.si++
	}
}

func (d *jsonDecoder) scopeSpans() error {
	r := &d.r
	d.pi = 0
	d.setScope("")
	if r.null() {
		return nil
	}
	if err := r.open('{'); err != nil {
		return syntax(d.scopePath(), err)
	}
	// Spans met before the scope are read after it (exporters write the
	// scope first), so that every span knows its scope name.
	spansAt := -1
	sawScope := false
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(d.scopePath(), err)
		}
		if !more {
			break
		}
		switch string(k) {
		case "scope":
			if err := d.scopeName(); err != nil {
				return err
			}
			sawScope = true
		case "spans":
			if r.null() {
				continue
			}
			if sawScope || spansAt >= 0 {
				if spansAt >= 0 { // a repeated key: the earlier array first
					if err := d.spansAt(spansAt); err != nil {
						return err
					}
					spansAt = -1
				}
				if err := d.spansArray(); err != nil {
					return err
				}
				continue
			}
			r.ws()
			spansAt = r.i
			if err := r.skip(); err != nil {
				return syntax(d.scopePath()+".spans", err)
			}
		default:
			if err := r.skip(); err != nil {
				return syntax(d.scopePath(), err)
			}
		}
	}
	if spansAt < 0 {
		return nil
	}
	return d.spansAt(spansAt)
}

// spansAt reads the array of Span objects at offset off, then returns the
// reader to where it was.
func (d *jsonDecoder) spansAt(off int) error {
	r := &d.r
	end, depth := r.i, r.depth
	r.i = off
	err := d.spansArray()
	r.i, r.depth = end, depth
	return err
}

// spansArray reads an array of Span objects.
func (d *jsonDecoder) spansArray() error {
	r := &d.r
	if err := r.open('['); err != nil {
		return syntax(d.scopePath()+".spans", err)
	}
	for first := true; ; first = false {
		more, err := r.more(first, ']')
		if err != nil {
			return syntax(d.spanPath(), err)
		}
		if !more {
			return nil
		}
		if err := d.span(); err != nil {
			return err
		}
		d.pi++
	}
}

// scopeName reads an InstrumentationScope object into d.scope (its name;
// the rest is checked for syntax only).
func (d *jsonDecoder) scopeName() error {
	r := &d.r
	path := func() string { return d.scopePath() + ".scope" } // built on error only
	if r.null() {
		return nil
	}
	if err := r.open('{'); err != nil {
		return syntax(path(), err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(path(), err)
		}
		if !more {
			return nil
		}
		if string(k) != "name" || r.null() {
			if err := r.skip(); err != nil {
				return syntax(path(), err)
			}
			continue
		}
		s, _, err := r.str()
		if err != nil {
			return syntax(path()+".name", err)
		}
		if len(s) > d.lim.MaxStringBytes {
			return tooLargeLimit(path()+".name", "max_string_bytes", len(s), d.lim.MaxStringBytes, "bytes")
		}
		name, _ := scopeOf(s) // the reader checked UTF-8: a JSON text is UTF-8 whole
		d.setScope(name)
	}
}

func (d *jsonDecoder) span() error {
	r := &d.r
	d.stats.SpansSeen++
	if d.stats.SpansSeen > d.lim.MaxSpansPerMessage {
		return tooLargeLimit(d.scopePath()+".spans", "max_spans_per_message", d.stats.SpansSeen, d.lim.MaxSpansPerMessage, "spans (at least)")
	}
	d.dst = append(d.dst, Span{Scope: d.mapper.scope})
	sp := &d.dst[len(d.dst)-1]
	var st spanState
	if !r.null() {
		if err := r.open('{'); err != nil {
			return syntax(d.spanPath(), err)
		}
		for first := true; ; first = false {
			k, more, err := r.member(first)
			if err != nil {
				return syntax(d.spanPath(), err)
			}
			if !more {
				break
			}
			if err := d.spanField(k, sp, &st); err != nil {
				return err
			}
		}
	}
	if bad, onResource := d.finishSpan(&st, &d.res); bad != nil {
		d.rejectSpan(bad, onResource, d.ri, d.si, d.pi)
	}
	return nil
}

// spanField reads the value of the span member named k.
func (d *jsonDecoder) spanField(k []byte, sp *Span, st *spanState) error {
	r := &d.r
	switch string(k) {
	case "traceId", "trace_id":
		return d.hexID(sp.TraceID[:], ".trace_id")
	case "spanId", "span_id":
		return d.hexID(sp.SpanID[:], ".span_id")
	case "name":
		if r.null() {
			return nil
		}
		s, escaped, err := r.str()
		if err != nil {
			return syntax(d.spanPath()+".name", err)
		}
		if len(s) > d.lim.MaxStringBytes {
			return tooLargeLimit(d.spanPath()+".name", "max_string_bytes", len(s), d.lim.MaxStringBytes, "bytes")
		}
		st.name = s
		if escaped {
			// s lives in the reader's scratch buffer: keep a copy in one
			// buffer reused across spans (unescaped, s points into the message).
			d.name = append(d.name[:0], s...)
			st.name = d.name
		}
	case "startTimeUnixNano", "start_time_unix_nano", "endTimeUnixNano", "end_time_unix_nano":
		name := "start_time_unix_nano"
		if k[0] == 'e' {
			name = "end_time_unix_nano"
		}
		if r.null() {
			return nil
		}
		u, err := d.uint64Value()
		if err != nil {
			return syntax(d.spanPath()+"."+name, err)
		}
		if k[0] == 'e' {
			sp.EndUnixNano = int64(u)
		} else {
			sp.StartUnixNano = int64(u)
		}
	case "attributes":
		d.inResource = false
		return d.attributes(&st.attrs, sp, st)
	case "status":
		return d.status(sp)
	case "events":
		return d.events(st)
	default:
		if err := r.skip(); err != nil {
			return syntax(d.spanPath(), err)
		}
	}
	return nil
}

// events reads a span's events: their times and names (the first-token
// events give the TTFT); their attributes are checked for syntax only.
func (d *jsonDecoder) events(st *spanState) error {
	r := &d.r
	if r.null() {
		return nil
	}
	if err := r.open('['); err != nil {
		return syntax(d.spanPath()+".events", err)
	}
	for first := true; ; first = false {
		more, err := r.more(first, ']')
		if err != nil {
			return syntax(d.eventPath(st), err)
		}
		if !more {
			return nil
		}
		if err := d.event(st); err != nil {
			return err
		}
		st.lib.events++
	}
}

func (d *jsonDecoder) eventPath(st *spanState) string {
	return d.spanPath() + ".events[" + strconv.Itoa(st.lib.events) + "]"
}

func (d *jsonDecoder) event(st *spanState) error {
	r := &d.r
	if r.null() {
		return nil
	}
	if err := r.open('{'); err != nil {
		return syntax(d.eventPath(st), err)
	}
	var t int64
	named := false // d.evName holds the name (copied: the next string read may reuse the scratch)
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(d.eventPath(st), err)
		}
		if !more {
			break
		}
		if r.null() {
			continue
		}
		switch string(k) {
		case "timeUnixNano", "time_unix_nano":
			u, err := d.uint64Value()
			if err != nil {
				return syntax(d.eventPath(st)+".time_unix_nano", err)
			}
			t = int64(u)
		case "name":
			s, _, err := r.str()
			if err != nil {
				return syntax(d.eventPath(st)+".name", err)
			}
			if len(s) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.eventPath(st)+".name", "max_string_bytes", len(s), d.lim.MaxStringBytes, "bytes")
			}
			d.evName = append(d.evName[:0], s...)
			named = true
		default:
			if err := r.skip(); err != nil {
				return syntax(d.eventPath(st), err)
			}
		}
	}
	if named {
		st.noteEvent(d.evName, t)
	}
	return nil
}

func (d *jsonDecoder) status(sp *Span) error {
	r := &d.r
	if r.null() {
		return nil
	}
	path := func() string { return d.spanPath() + ".status" }
	if err := r.open('{'); err != nil {
		return syntax(path(), err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(path(), err)
		}
		if !more {
			return nil
		}
		if r.null() {
			continue
		}
		switch string(k) {
		case "code":
			if r.peek() == '"' {
				s, _, err := r.str()
				if err != nil {
					return syntax(path()+".code", err)
				}
				switch string(s) {
				case "STATUS_CODE_UNSET", "STATUS_CODE_OK":
					sp.Error = false
				case "STATUS_CODE_ERROR":
					sp.Error = true
				default:
					return malformed(path()+".code", "unknown status code "+strconv.Quote(string(s)))
				}
				continue
			}
			n, err := r.number()
			if err != nil {
				return syntax(path()+".code", err)
			}
			c, ok := parseInt64(n)
			if !ok || c != int64(int32(c)) {
				return malformed(path()+".code", "want a 32-bit integer, got "+strconv.Quote(string(n)))
			}
			sp.Error = c == statusCodeError
		case "message":
			s, _, err := r.str()
			if err != nil {
				return syntax(path()+".message", err)
			}
			if len(s) > d.lim.MaxStringBytes {
				return tooLargeLimit(path()+".message", "max_string_bytes", len(s), d.lim.MaxStringBytes, "bytes")
			}
		default:
			if err := r.skip(); err != nil {
				return syntax(path(), err)
			}
		}
	}
}
