// otlp-decode.mjs: decodes an OTLP/HTTP protobuf trace body (an
// ExportTraceServiceRequest, as the receiver writes it to otlp_spans) into
// plain span objects: resource attributes, scope, name, kind, start/end
// (Unix ns, BigInt), status, attributes, events (ms after the span start).
// It reads the wire format itself (no SDK, no generated code), so it shows
// exactly what a library sent. Used by otlp-dump.mjs and check-attributes.mjs.

/** Reader walks protobuf wire format; a malformed body throws an Error
 * naming the offset. */
class Reader {
  constructor(buf) {
    this.buf = buf;
    this.pos = 0;
  }
  done() {
    return this.pos >= this.buf.length;
  }
  varint() {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      if (this.pos >= this.buf.length) throw new Error(`truncated varint at byte ${this.pos}`);
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  fixed64() {
    if (this.pos + 8 > this.buf.length) throw new Error(`truncated fixed64 at byte ${this.pos}`);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  double() {
    if (this.pos + 8 > this.buf.length) throw new Error(`truncated double at byte ${this.pos}`);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  bytes() {
    const n = Number(this.varint());
    if (this.pos + n > this.buf.length) throw new Error(`truncated field of ${n} bytes at byte ${this.pos}`);
    const v = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }
  /** fields yields [fieldNumber, wireType]; the caller reads the value or
   * calls skip(wireType). */
  *fields() {
    while (!this.done()) {
      const tag = Number(this.varint());
      yield [tag >> 3, tag & 7];
    }
  }
  skip(wt) {
    if (wt === 0) this.varint();
    else if (wt === 1) this.pos += 8;
    else if (wt === 2) this.bytes();
    else if (wt === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wt} at byte ${this.pos}`);
  }
}

const str = (b) => Buffer.from(b).toString('utf8');
const hex = (b) => Buffer.from(b).toString('hex');

function anyValue(buf) {
  const r = new Reader(buf);
  let v = null;
  for (const [f, wt] of r.fields()) {
    if (f === 1 && wt === 2) v = str(r.bytes());
    else if (f === 2 && wt === 0) v = r.varint() !== 0n;
    else if (f === 3 && wt === 0) v = Number(BigInt.asIntN(64, r.varint()));
    else if (f === 4 && wt === 1) v = r.double();
    else if (f === 5 && wt === 2) {
      const a = new Reader(r.bytes());
      v = [];
      for (const [af, awt] of a.fields()) {
        if (af === 1 && awt === 2) v.push(anyValue(a.bytes()));
        else a.skip(awt);
      }
    } else if (f === 6 && wt === 2) {
      const kv = new Reader(r.bytes());
      v = {};
      for (const [kf, kwt] of kv.fields()) {
        if (kf === 1 && kwt === 2) Object.assign(v, keyValue(kv.bytes()));
        else kv.skip(kwt);
      }
    } else if (f === 7 && wt === 2) v = { bytes: hex(r.bytes()) };
    else r.skip(wt);
  }
  return v;
}

function keyValue(buf) {
  const r = new Reader(buf);
  let k = '';
  let v = null;
  for (const [f, wt] of r.fields()) {
    if (f === 1 && wt === 2) k = str(r.bytes());
    else if (f === 2 && wt === 2) v = anyValue(r.bytes());
    else r.skip(wt);
  }
  return { [k]: v };
}

function event(buf, startNs) {
  const r = new Reader(buf);
  const e = { name: '', after_start_ms: null, attributes: {} };
  for (const [f, wt] of r.fields()) {
    if (f === 1 && wt === 1) e.after_start_ms = Number(r.fixed64() - startNs) / 1e6;
    else if (f === 2 && wt === 2) e.name = str(r.bytes());
    else if (f === 3 && wt === 2) Object.assign(e.attributes, keyValue(r.bytes()));
    else r.skip(wt);
  }
  return e;
}

const KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'];
const CODES = ['UNSET', 'OK', 'ERROR'];

function span(buf) {
  // Events carry absolute times; read the span's start first.
  const s = { trace_id: '', span_id: '', name: '', kind: '', start_ns: 0n, end_ns: 0n, status: { code: 'UNSET', message: '' }, attributes: {}, events: [] };
  const eventBufs = [];
  const r = new Reader(buf);
  for (const [f, wt] of r.fields()) {
    if (f === 1 && wt === 2) s.trace_id = hex(r.bytes());
    else if (f === 2 && wt === 2) s.span_id = hex(r.bytes());
    else if (f === 5 && wt === 2) s.name = str(r.bytes());
    else if (f === 6 && wt === 0) s.kind = KINDS[Number(r.varint())] ?? 'UNKNOWN';
    else if (f === 7 && wt === 1) s.start_ns = r.fixed64();
    else if (f === 8 && wt === 1) s.end_ns = r.fixed64();
    else if (f === 9 && wt === 2) Object.assign(s.attributes, keyValue(r.bytes()));
    else if (f === 11 && wt === 2) eventBufs.push(r.bytes());
    else if (f === 15 && wt === 2) {
      const st = new Reader(r.bytes());
      for (const [sf, swt] of st.fields()) {
        if (sf === 2 && swt === 2) s.status.message = str(st.bytes());
        else if (sf === 3 && swt === 0) s.status.code = CODES[Number(st.varint())] ?? 'UNKNOWN';
        else st.skip(swt);
      }
    } else r.skip(wt);
  }
  s.events = eventBufs.map((b) => event(b, s.start_ns));
  s.duration_ms = Number(s.end_ns - s.start_ns) / 1e6;
  return s;
}

function attributesOf(buf) {
  const r = new Reader(buf);
  const attrs = {};
  for (const [f, wt] of r.fields()) {
    if (f === 1 && wt === 2) Object.assign(attrs, keyValue(r.bytes()));
    else r.skip(wt);
  }
  return attrs;
}

/** decodeTraces returns the spans of one ExportTraceServiceRequest body,
 * each with its resource attributes and scope. */
export function decodeTraces(body) {
  const out = [];
  const req = new Reader(body);
  for (const [f, wt] of req.fields()) {
    if (f !== 1 || wt !== 2) {
      req.skip(wt);
      continue;
    }
    const rs = new Reader(req.bytes());
    let resource = {};
    const scopeSpans = [];
    for (const [rf, rwt] of rs.fields()) {
      if (rf === 1 && rwt === 2) resource = attributesOf(rs.bytes());
      else if (rf === 2 && rwt === 2) scopeSpans.push(rs.bytes());
      else rs.skip(rwt);
    }
    for (const ssBuf of scopeSpans) {
      const ss = new Reader(ssBuf);
      const scope = { name: '', version: '' };
      const spans = [];
      for (const [sf, swt] of ss.fields()) {
        if (sf === 1 && swt === 2) {
          const sc = new Reader(ss.bytes());
          for (const [cf, cwt] of sc.fields()) {
            if (cf === 1 && cwt === 2) scope.name = str(sc.bytes());
            else if (cf === 2 && cwt === 2) scope.version = str(sc.bytes());
            else sc.skip(cwt);
          }
        } else if (sf === 2 && swt === 2) spans.push(span(ss.bytes()));
        else ss.skip(swt);
      }
      for (const s of spans) out.push({ resource, scope, ...s });
    }
  }
  return out;
}

