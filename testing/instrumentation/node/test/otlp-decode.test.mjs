// The decoder against what the SDK's own OTLP/HTTP protobuf exporter
// sends: a span with every attribute type, an event, an error status and a
// resource, exported to a local receiver and decoded back.
import assert from 'node:assert/strict';
import test from 'node:test';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { startReceiver } from '../check-attributes.mjs';
import { decodeTraces } from '../otlp-decode.mjs';

test('decodes what the OTLP protobuf exporter sends', async () => {
  const rec = await startReceiver();
  try {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'svc', 'tenant.id': 'acme' }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: `http://127.0.0.1:${rec.port}/v1/traces` }))],
    });
    const tracer = provider.getTracer('scope-x', '1.2.3');
    const start = [1_800_000_000, 5_000_000]; // [s, ns]
    const span = tracer.startSpan('chat m', { kind: SpanKind.CLIENT, startTime: start });
    span.setAttributes({
      s: 'text',
      b: true,
      i: -42,
      d: 0.25,
      arr: ['stop', 'length'],
    });
    span.addEvent('first', { n: 1 }, [1_800_000_000, 17_500_000]);
    span.setStatus({ code: SpanStatusCode.ERROR, message: '429 slow down' });
    span.end([1_800_000_001, 5_000_000]);
    await provider.shutdown();

    assert.equal(rec.bodies.length, 1);
    const spans = decodeTraces(rec.bodies[0]);
    assert.equal(spans.length, 1);
    const s = spans[0];
    assert.deepEqual(s.resource, { 'service.name': 'svc', 'tenant.id': 'acme' });
    assert.deepEqual(s.scope, { name: 'scope-x', version: '1.2.3' });
    assert.equal(s.name, 'chat m');
    assert.equal(s.kind, 'CLIENT');
    assert.equal(s.start_ns, 1_800_000_000_005_000_000n);
    assert.equal(s.end_ns, 1_800_000_001_005_000_000n);
    assert.equal(s.duration_ms, 1000);
    assert.deepEqual(s.status, { code: 'ERROR', message: '429 slow down' });
    assert.deepEqual(s.attributes, { s: 'text', b: true, i: -42, d: 0.25, arr: ['stop', 'length'] });
    assert.deepEqual(s.events, [{ name: 'first', after_start_ms: 12.5, attributes: { n: 1 } }]);
    assert.match(s.trace_id, /^[0-9a-f]{32}$/);
    assert.match(s.span_id, /^[0-9a-f]{16}$/);
  } finally {
    rec.server.close();
  }
});

test('a truncated body is an error naming the offset', () => {
  // field 1 (resource_spans), length 10, but only 2 bytes follow
  assert.throws(() => decodeTraces(Buffer.from([0x0a, 0x0a, 0x01, 0x02])), /truncated field of 10 bytes at byte 2/);
});
