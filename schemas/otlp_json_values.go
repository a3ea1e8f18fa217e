package schemas

import (
	"encoding/hex"
	"math"
	"strconv"
)

// The attribute and value readers of the OTLP/JSON decoder.

// attributes reads an array of KeyValue, counting them in *count, and maps
// them onto sp (or onto the resource when sp is nil).
func (d *jsonDecoder) attributes(count *int, sp *Span, st *spanState) error {
	scope := spanScope
	if sp == nil {
		scope = resourceScope
	}
	r := &d.r
	if r.null() {
		return nil
	}
	if err := r.open('['); err != nil {
		return syntax(d.attrPath(""), err)
	}
	for first := true; ; first = false {
		d.ai = *count
		more, err := r.more(first, ']')
		if err != nil {
			return syntax(d.attrPath(""), err)
		}
		if !more {
			return nil
		}
		*count++
		if *count > d.lim.MaxAttributesPerSpan {
			base := d.spanPath()
			if d.inResource {
				base = resourcePath(d.ri)
			}
			return tooLargeLimit(base+".attributes", "max_attributes_per_span", *count, d.lim.MaxAttributesPerSpan, "attributes (at least)")
		}
		var v attrVal
		hit, key, err := d.keyValue(scope, &v)
		if err != nil {
			return err
		}
		switch {
		case hit == 0 && sp != nil:
			st.noteKey(key)
		case hit == 0:
		case sp == nil:
			d.resourceAttr(&d.res, hit, &v)
		default:
			d.spanAttr(sp, st, hit, &v)
		}
	}
}

// keyValue reads one KeyValue object. The value of an unmapped key is only
// checked for syntax, unless it is longer than max_string_bytes. It
// returns the key too when it points into the message (not escaped).
func (d *jsonDecoder) keyValue(scope uint64, v *attrVal) (uint64, []byte, error) {
	r := &d.r
	if r.null() {
		return 0, nil, nil
	}
	if err := r.open('{'); err != nil {
		return 0, nil, syntax(d.attrPath(""), err)
	}
	var hit uint64
	var key []byte
	haveKey := false
	valStart, valEnd := -1, -1
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return 0, nil, syntax(d.attrPath(""), err)
		}
		if !more {
			break
		}
		switch string(k) {
		case "key":
			if r.null() {
				continue
			}
			k, escaped, err := r.str()
			if err != nil {
				return 0, nil, syntax(d.attrPath(".key"), err)
			}
			if len(k) > d.lim.MaxStringBytes {
				return 0, nil, tooLargeLimit(d.attrPath(".key"), "max_string_bytes", len(k), d.lim.MaxStringBytes, "bytes")
			}
			hit, haveKey = d.m.match(k, scope), true
			key = nil
			if !escaped {
				key = k
			}
		case "value":
			if haveKey && hit != 0 {
				if err := d.anyValue(v, false); err != nil {
					return 0, nil, err
				}
				valStart = -1
				continue
			}
			r.ws()
			valStart = r.i
			if err := r.skip(); err != nil {
				return 0, nil, syntax(d.attrPath(".value"), err)
			}
			valEnd = r.i
		default:
			if err := r.skip(); err != nil {
				return 0, nil, syntax(d.attrPath(""), err)
			}
		}
	}
	if valStart >= 0 && (hit != 0 || valEnd-valStart > d.lim.MaxStringBytes) {
		end, depth := r.i, r.depth
		r.i = valStart
		err := d.anyValue(v, false)
		r.i, r.depth = end, depth
		if err != nil {
			return 0, nil, err
		}
	}
	return hit, key, nil
}

// anyValue reads an AnyValue object into v: an attribute's value, whose
// array values are read down to their first element, or (elem) that element.
func (d *jsonDecoder) anyValue(v *attrVal, elem bool) error {
	r := &d.r
	if r.null() {
		return nil
	}
	array := !elem
	path := ".value"
	if elem {
		path = ".value.array_value.values[0]"
	}
	if err := r.open('{'); err != nil {
		return syntax(d.attrPath(path), err)
	}
	for first := true; ; first = false {
		k, more, err := r.member(first)
		if err != nil {
			return syntax(d.attrPath(path), err)
		}
		if !more {
			return nil
		}
		if r.null() {
			continue
		}
		switch string(k) {
		case "stringValue", "string_value":
			s, escaped, err := r.str()
			if err != nil {
				return syntax(d.attrPath(path+".string_value"), err)
			}
			if len(s) > d.lim.MaxStringBytes {
				return tooLargeLimit(d.attrPath(path+".string_value"), "max_string_bytes", len(s), d.lim.MaxStringBytes, "bytes")
			}
			if escaped { // the scratch buffer is reused by the next string read
				if array {
					d.valBuf = append(d.valBuf[:0], s...)
					s = d.valBuf
				} else {
					d.firstBuf = append(d.firstBuf[:0], s...)
					s = d.firstBuf
				}
			}
			v.kind, v.str = kindString, s
		case "boolValue", "bool_value":
			b, err := r.boolean()
			if err != nil {
				return syntax(d.attrPath(path+".bool_value"), err)
			}
			v.kind, v.i = kindBool, 0
			if b {
				v.i = 1
			}
		case "intValue", "int_value":
			i, err := d.int64Value()
			if err != nil {
				return syntax(d.attrPath(path+".int_value"), err)
			}
			v.kind, v.i = kindInt, i
		case "doubleValue", "double_value":
			f, err := d.doubleValue()
			if err != nil {
				return syntax(d.attrPath(path+".double_value"), err)
			}
			v.kind, v.f = kindDouble, f
		case "arrayValue", "array_value":
			v.kind, v.hasFirst = kindArray, false
			if !array {
				if err := r.skip(); err != nil {
					return syntax(d.attrPath(path+".array_value"), err)
				}
				continue
			}
			if err := d.arrayFirst(v); err != nil {
				return err
			}
		case "kvlistValue", "kvlist_value":
			if err := r.skip(); err != nil {
				return syntax(d.attrPath(path+".kvlist_value"), err)
			}
			v.kind = kindKvlist
		case "bytesValue", "bytes_value":
			s, _, err := r.str()
			if err != nil {
				return syntax(d.attrPath(path+".bytes_value"), err)
			}
			if n := len(s) / 4 * 3; n > d.lim.MaxStringBytes { // base64: 3 bytes per 4 characters
				return tooLargeLimit(d.attrPath(path+".bytes_value"), "max_string_bytes", n, d.lim.MaxStringBytes, "bytes (about)")
			}
			v.kind, v.str = kindBytes, nil
		case "stringValueStrindex", "string_value_strindex":
			if err := r.skip(); err != nil {
				return syntax(d.attrPath(path), err)
			}
			v.kind = kindEmpty
		default:
			if err := r.skip(); err != nil {
				return syntax(d.attrPath(path), err)
			}
		}
	}
}

// arrayFirst reads an ArrayValue object, keeping its first element.
func (d *jsonDecoder) arrayFirst(v *attrVal) error {
	r := &d.r
	path := func() string { return d.attrPath(".value.array_value") }
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
		if string(k) != "values" || r.null() {
			if err := r.skip(); err != nil {
				return syntax(path(), err)
			}
			continue
		}
		if err := r.open('['); err != nil {
			return syntax(path()+".values", err)
		}
		for first := true; ; first = false {
			more, err := r.more(first, ']')
			if err != nil {
				return syntax(path()+".values", err)
			}
			if !more {
				break
			}
			if v.hasFirst {
				if err := r.skip(); err != nil {
					return syntax(path()+".values", err)
				}
				continue
			}
			// d.elem rather than a local: anyValue and arrayFirst recurse, so a
			// local would escape to the heap.
			e := &d.elem
			*e = attrVal{}
			if err := d.anyValue(e, true); err != nil {
				return err
			}
			v.hasFirst, v.firstKind, v.firstStr, v.firstI = true, e.kind, e.str, e.i
		}
	}
}

// numberToken reads the text of a number written as a JSON string or as a
// JSON number (protobuf's JSON mapping allows both for 64-bit integers).
func (d *jsonDecoder) numberToken() ([]byte, error) {
	if d.r.peek() == '"' {
		b, _, err := d.r.str()
		return b, err
	}
	return d.r.number()
}

// int64Value reads a 64-bit integer written as a string or a number.
func (d *jsonDecoder) int64Value() (int64, error) {
	b, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	i, ok := parseInt64(b)
	if !ok {
		return 0, d.r.fail("want a 64-bit integer, got " + strconv.Quote(string(b)))
	}
	return i, nil
}

// uint64Value reads an unsigned 64-bit integer written as a string or a number.
func (d *jsonDecoder) uint64Value() (uint64, error) {
	b, err := d.numberToken()
	if err != nil {
		return 0, err
	}
	u, ok := parseUint64(b)
	if !ok {
		return 0, d.r.fail("want an unsigned 64-bit integer, got " + strconv.Quote(string(b)))
	}
	return u, nil
}

// doubleValue reads a double written as a number, or as a string holding a
// number, "NaN", "Infinity" or "-Infinity".
func (d *jsonDecoder) doubleValue() (float64, error) {
	r := &d.r
	var b []byte
	var err error
	if r.peek() == '"' {
		b, _, err = r.str()
		if err != nil {
			return 0, err
		}
		switch string(b) {
		case "NaN":
			return math.NaN(), nil
		case "Infinity":
			return math.Inf(1), nil
		case "-Infinity":
			return math.Inf(-1), nil
		}
		sub := jsonReader{b: b}
		if nb, err := sub.number(); err != nil || len(nb) != len(b) {
			return 0, r.fail("want a number, got " + strconv.Quote(string(b)))
		}
	} else if b, err = r.number(); err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !isRangeErr(err) {
		return 0, r.fail("want a number, got " + strconv.Quote(string(b)))
	}
	return f, nil
}

// isRangeErr reports a ParseFloat overflow, which yields ±Inf (or 0), as
// protobuf's JSON mapping does.
func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// hexID decodes a hex trace or span id (the span's field leaf) into dst; ""
// leaves it zero.
func (d *jsonDecoder) hexID(dst []byte, leaf string) error {
	r := &d.r
	if r.null() {
		clear(dst)
		return nil
	}
	s, _, err := r.str()
	if err != nil {
		return syntax(d.spanPath()+leaf, err)
	}
	if len(s) == 0 {
		clear(dst)
		return nil
	}
	if len(s) != 2*len(dst) {
		return malformed(d.spanPath()+leaf, "want "+strconv.Itoa(2*len(dst))+" hex characters, got "+strconv.Itoa(len(s)))
	}
	if _, err := hex.Decode(dst, s); err != nil {
		return malformed(d.spanPath()+leaf, "not hex: "+err.Error())
	}
	return nil
}
