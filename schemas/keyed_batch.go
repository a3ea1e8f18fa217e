package schemas

import (
	"encoding/binary"
	"math"
	"strconv"
)

// KeyedBatchVersion is the first byte of every keyed batch this build writes.
// It reads this version, KeyedBatchVersion2 and KeyedBatchVersion1.
const KeyedBatchVersion = 3

// KeyedBatchVersion2 is the format of builds before Span.Scope: its span
// records end after ResponseID. It is still read (the spans have no scope).
const KeyedBatchVersion2 = 2

// KeyedBatchVersion1 is the format of builds before the token kinds: its
// span records end after the strings. It is still read, so that records on
// the keyed topic and checkpoints written by an older build decode (their
// spans have no cache, reasoning or stream fields).
const KeyedBatchVersion1 = 1

// The keyed-batch format carries spans and corrections from the engine's
// router to its workers (the keyed topic between the two stages). It is
// internal: both ends run the same build, so it favours speed and exactness
// over evolvability, and a version byte guards against mixing builds.
//
// Layout (integers little-endian, "uvarint" as encoding/binary writes it):
//
//	version            1 byte (KeyedBatchVersion)
//	span count         uvarint
//	correction count   uvarint
//	spans              span count records
//	corrections        correction count records
//
// Span record: trace id (16 bytes), span id (8), start and end Unix ns (int64),
// DurationMs, TTFTMs, TPOTMs, Confidence, Alignment (float64 bits, so NaN
// payloads and -0 survive), input and output tokens (int64), Has (uint16),
// Error (1 byte, 0 or 1), then 11 strings, each a uvarint length and its
// bytes: FinishReason, ErrorType, Tenant, Service, Model, Variant, Operation,
// Provider, ResponseModel, Route, SessionID; then (version 2 only)
// CacheReadTokens, CacheWriteTokens, ReasoningTokens (int64), Stream (1
// byte, 0 or 1) and ResponseID (a string); then (version 3 only) Scope (a
// string).
//
// Correction record: SchemaVersion (zig-zag uvarint), time Unix ns (int64),
// trace id (16 bytes), then EventID, Tenant, SessionID, Model, Variant, Kind as
// strings, then the context: a uvarint count and that many key, value string
// pairs (an empty context decodes as nil); then (version 2 only) ResponseID
// as a string.
//
// Strings are copied as bytes, without any UTF-8 check: every field
// round-trips exactly.

const (
	keyedSpanFixed       = 16 + 8 + 2*8 + 5*8 + 2*8 + 2 + 1 // bytes before a span's strings
	keyedSpanStrings     = 11
	keyedSpanMin         = keyedSpanFixed + keyedSpanStrings // the smallest version-1 span; version 2 adds keyedSpanV2
	keyedSpanV2          = 3*8 + 1 + 1                       // the token kinds, the stream flag, the response id
	keyedSpanV3          = 1                                 // the scope
	keyedCorrectionFixed = 8 + 16
	keyedCorrectionMin   = 1 + keyedCorrectionFixed + 6 + 1
	// keyedHasMask holds every Fields bit this build knows.
	keyedHasMaskV1 = HasTTFT | HasTPOT | HasInputTokens | HasOutputTokens | HasConfidence | HasAlignment
	keyedHasMask   = keyedHasMaskV1 | HasCacheReadTokens | HasCacheWriteTokens | HasReasoningTokens | HasStream
)

// AppendKeyedBatch appends spans and corrections to dst in the keyed-batch
// format and returns the extended slice.
func AppendKeyedBatch(dst []byte, spans []Span, corrections []Correction) []byte {
	return AppendKeyedBatchVersion(dst, KeyedBatchVersion, spans, corrections)
}

// AppendKeyedBatchVersion is AppendKeyedBatch in format version:
// KeyedBatchVersion, or KeyedBatchVersion2, which builds before Span.Scope
// read too (the spans' Scope is left out) — what the router writes during
// the first step of a rolling upgrade (config compat.write_formats:
// previous, docs/state-and-upgrades.md). Any other version writes
// KeyedBatchVersion.
func AppendKeyedBatchVersion(dst []byte, version byte, spans []Span, corrections []Correction) []byte {
	if version != KeyedBatchVersion2 {
		version = KeyedBatchVersion
	}
	dst = append(dst, version)
	dst = binary.AppendUvarint(dst, uint64(len(spans)))
	dst = binary.AppendUvarint(dst, uint64(len(corrections)))
	le := binary.LittleEndian
	for i := range spans {
		s := &spans[i]
		dst = append(dst, s.TraceID[:]...)
		dst = append(dst, s.SpanID[:]...)
		dst = le.AppendUint64(dst, uint64(s.StartUnixNano))
		dst = le.AppendUint64(dst, uint64(s.EndUnixNano))
		for _, f := range [5]float64{s.DurationMs, s.TTFTMs, s.TPOTMs, s.Confidence, s.Alignment} {
			dst = le.AppendUint64(dst, math.Float64bits(f))
		}
		dst = le.AppendUint64(dst, uint64(s.InputTokens))
		dst = le.AppendUint64(dst, uint64(s.OutputTokens))
		dst = le.AppendUint16(dst, uint16(s.Has))
		if s.Error {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
		for _, str := range [keyedSpanStrings]string{s.FinishReason, s.ErrorType, s.Key.Tenant, s.Key.Service, s.Key.Model,
			s.Key.Variant, s.Operation, s.Provider, s.ResponseModel, s.Route, s.SessionID} {
			dst = appendKeyedString(dst, str)
		}
		dst = le.AppendUint64(dst, uint64(s.CacheReadTokens))
		dst = le.AppendUint64(dst, uint64(s.CacheWriteTokens))
		dst = le.AppendUint64(dst, uint64(s.ReasoningTokens))
		if s.Stream {
			dst = append(dst, 1)
		} else {
			dst = append(dst, 0)
		}
		dst = appendKeyedString(dst, s.ResponseID)
		if version >= 3 {
			dst = appendKeyedString(dst, s.Scope)
		}
	}
	for i := range corrections {
		c := &corrections[i]
		dst = binary.AppendUvarint(dst, zigzag(int64(c.SchemaVersion)))
		dst = le.AppendUint64(dst, uint64(c.TimeUnixNano))
		dst = append(dst, c.TraceID[:]...)
		for _, str := range [6]string{c.EventID, c.Tenant, c.SessionID, c.Model, c.Variant, string(c.Kind)} {
			dst = appendKeyedString(dst, str)
		}
		dst = binary.AppendUvarint(dst, uint64(len(c.Context)))
		for _, kv := range c.Context {
			dst = appendKeyedString(dst, kv.Key)
			dst = appendKeyedString(dst, kv.Value)
		}
		dst = appendKeyedString(dst, c.ResponseID)
	}
	return dst
}

func appendKeyedString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// keyedReader reads a keyed batch; after the first failure every read
// returns zero values and failed is set.
type keyedReader struct {
	b       []byte
	off     int
	failed  bool
	version byte
	// strings caches recent values per string field so that a batch of spans
	// sharing tenants, services and models allocates each once.
	strings [keyedSpanStrings + 7]internSet // the last: Scope
}

func (r *keyedReader) fixed(n int) []byte {
	if r.failed || len(r.b)-r.off < n {
		r.failed = true
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *keyedReader) u64() uint64 {
	p := r.fixed(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (r *keyedReader) uvarint() uint64 {
	if r.failed {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.failed = true
		return 0
	}
	r.off += n
	return v
}

// str reads a string for field slot; slot < 0 means do not cache.
func (r *keyedReader) str(slot int) string {
	n := r.uvarint()
	if n > uint64(len(r.b)-r.off) {
		r.failed = true
		return ""
	}
	p := r.fixed(int(n))
	if len(p) == 0 {
		return ""
	}
	if slot < 0 {
		return string(p)
	}
	c := &r.strings[slot]
	for i := range c.s {
		if c.s[i] == string(p) {
			return c.s[i]
		}
	}
	s := string(p)
	c.s[c.next%internWays] = s
	c.next++
	return s
}

// DecodeKeyedBatch decodes a batch written by AppendKeyedBatch (this build's
// KeyedBatchVersion, or KeyedBatchVersion2 or 1 of older builds), appending its
// spans and corrections to the given slices. Every field comes back exactly
// as written. Anything else (another version, truncation, counts larger than
// the bytes can hold, a bad flag, trailing bytes) yields an error wrapping
// ErrMalformed, and the slices come back unchanged.
func DecodeKeyedBatch(b []byte, spans []Span, corrections []Correction) ([]Span, []Correction, error) {
	return decodeKeyedBatch(b, KeyedBatchVersion, spans, corrections)
}

// decodeKeyedBatch is DecodeKeyedBatch reading versions 1 to newest: with
// newest KeyedBatchVersion2 it is the reader of the builds before
// Span.Scope, which refuse a version-3 batch (the reason for
// compat.write_formats during a rolling upgrade).
func decodeKeyedBatch(b []byte, newest byte, spans []Span, corrections []Correction) ([]Span, []Correction, error) {
	if len(b) == 0 {
		return spans, corrections, malformed("keyed_batch", "empty")
	}
	if b[0] < KeyedBatchVersion1 || b[0] > newest {
		return spans, corrections, malformed("keyed_batch.version", "got "+strconv.Itoa(int(b[0]))+", this build reads "+
			strconv.Itoa(KeyedBatchVersion1)+" to "+strconv.Itoa(int(newest)))
	}
	r := &keyedReader{b: b, off: 1, version: b[0]}
	spanMin, corrMin := uint64(keyedSpanMin), uint64(keyedCorrectionMin)
	if r.version >= 2 {
		spanMin += keyedSpanV2
		corrMin++
	}
	if r.version >= 3 {
		spanMin += keyedSpanV3
	}
	ns, nc := r.uvarint(), r.uvarint()
	if r.failed {
		return spans, corrections, malformed("keyed_batch", "truncated counts")
	}
	// Refuse counts the remaining bytes cannot hold before allocating for them.
	rest := uint64(len(b) - r.off)
	if ns > rest/spanMin || nc > rest/corrMin || ns*spanMin+nc*corrMin > rest {
		return spans, corrections, malformed("keyed_batch", "counts of "+strconv.FormatUint(ns, 10)+" spans and "+
			strconv.FormatUint(nc, 10)+" corrections do not fit in "+strconv.FormatUint(rest, 10)+" bytes")
	}
	s0, c0 := len(spans), len(corrections)
	spans = growSpans(spans, int(ns))
	for i := range int(ns) {
		spans = append(spans, Span{})
		if reason := r.span(&spans[len(spans)-1]); reason != "" {
			return spans[:s0], corrections, malformed("keyed_batch.spans["+strconv.Itoa(i)+"]", reason)
		}
	}
	for i := range int(nc) {
		corrections = append(corrections, Correction{})
		if reason := r.correction(&corrections[len(corrections)-1]); reason != "" {
			return spans[:s0], corrections[:c0], malformed("keyed_batch.corrections["+strconv.Itoa(i)+"]", reason)
		}
	}
	if r.off != len(b) {
		return spans[:s0], corrections[:c0], malformed("keyed_batch", strconv.Itoa(len(b)-r.off)+" bytes after the last record")
	}
	return spans, corrections, nil
}

func growSpans(s []Span, n int) []Span {
	if cap(s)-len(s) >= n {
		return s
	}
	g := make([]Span, len(s), len(s)+n)
	copy(g, s)
	return g
}

func (r *keyedReader) span(s *Span) string {
	copy(s.TraceID[:], r.fixed(16))
	copy(s.SpanID[:], r.fixed(8))
	s.StartUnixNano = int64(r.u64())
	s.EndUnixNano = int64(r.u64())
	s.DurationMs = math.Float64frombits(r.u64())
	s.TTFTMs = math.Float64frombits(r.u64())
	s.TPOTMs = math.Float64frombits(r.u64())
	s.Confidence = math.Float64frombits(r.u64())
	s.Alignment = math.Float64frombits(r.u64())
	s.InputTokens = int64(r.u64())
	s.OutputTokens = int64(r.u64())
	flags := r.fixed(3)
	if r.failed {
		return "truncated"
	}
	s.Has = Fields(binary.LittleEndian.Uint16(flags))
	mask := keyedHasMask
	if r.version == KeyedBatchVersion1 {
		mask = keyedHasMaskV1
	}
	if s.Has&^mask != 0 {
		return "unknown Has bits " + strconv.Itoa(int(s.Has&^mask))
	}
	switch flags[2] {
	case 0:
	case 1:
		s.Error = true
	default:
		return "error flag " + strconv.Itoa(int(flags[2])) + ", want 0 or 1"
	}
	s.FinishReason = r.str(0)
	s.ErrorType = r.str(1)
	s.Key.Tenant = r.str(2)
	s.Key.Service = r.str(3)
	s.Key.Model = r.str(4)
	s.Key.Variant = r.str(5)
	s.Operation = r.str(6)
	s.Provider = r.str(7)
	s.ResponseModel = r.str(8)
	s.Route = r.str(9)
	s.SessionID = r.str(10)
	if r.version >= 2 {
		s.CacheReadTokens = int64(r.u64())
		s.CacheWriteTokens = int64(r.u64())
		s.ReasoningTokens = int64(r.u64())
		switch f := r.fixed(1); {
		case f == nil:
		case f[0] == 1:
			s.Stream = true
		case f[0] != 0:
			return "stream flag " + strconv.Itoa(int(f[0])) + ", want 0 or 1"
		}
		s.ResponseID = r.str(-1)
	}
	if r.version >= 3 {
		s.Scope = r.str(keyedSpanStrings + 6)
	}
	if r.failed {
		return "truncated"
	}
	return ""
}

func (r *keyedReader) correction(c *Correction) string {
	v := unzigzag(r.uvarint())
	if v != int64(int(v)) {
		return "schema version out of range"
	}
	c.SchemaVersion = int(v)
	c.TimeUnixNano = int64(r.u64())
	copy(c.TraceID[:], r.fixed(16))
	c.EventID = r.str(-1)
	c.Tenant = r.str(keyedSpanStrings)
	c.SessionID = r.str(-1)
	c.Model = r.str(keyedSpanStrings + 1)
	c.Variant = r.str(keyedSpanStrings + 2)
	c.Kind = CorrectionKind(r.str(keyedSpanStrings + 3))
	n := r.uvarint()
	if r.failed {
		return "truncated"
	}
	if n > uint64(len(r.b)-r.off)/2 { // every pair takes at least 2 bytes
		return "context count " + strconv.FormatUint(n, 10) + " does not fit the batch"
	}
	if n > 0 {
		c.Context = make([]KV, n)
		for i := range c.Context {
			c.Context[i] = KV{Key: r.str(keyedSpanStrings + 4), Value: r.str(keyedSpanStrings + 5)}
		}
	}
	if r.version >= 2 {
		c.ResponseID = r.str(-1)
	}
	if r.failed {
		return "truncated"
	}
	return ""
}
