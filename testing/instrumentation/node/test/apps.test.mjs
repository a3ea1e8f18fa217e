// Each app against the suite's fake OpenAI server (../fakeopenai.py) and a
// local OTLP receiver: the measurement lines the contract asks for, the
// spans on the wire (tenant, variant, one span per call where the library
// writes one), and the README's per-library claims that matter to
// fusebox. Needs `npm ci` and python3.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startFake, startReceiver } from '../check-attributes.mjs';
import { decodeTraces } from '../otlp-decode.mjs';

const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

const SCENARIO = {
  calls: [
    { id: 'plain', model: 'gpt-4o-mini', operation: 'chat', stream: false, variant: 'canary', max_tokens: 32, input_tokens: 3, output_tokens: 5 },
    { id: 'stream', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: '', max_tokens: 32, ttft_ms: 60, chunk_delay_ms: 5, output_tokens: 4 },
    { id: 'r429', model: 'gpt-4o-mini', operation: 'chat', stream: false, variant: '', max_tokens: 32, status: 429 },
    { id: 'r500', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: 'canary', max_tokens: 32, status: 500 },
    { id: 'emb', model: 'text-embedding-3-small', operation: 'embeddings', stream: false, variant: '', max_tokens: 0 },
    { id: 'length', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: '', max_tokens: 32, finish_reason: 'length' },
  ],
};

// What the README says each library writes: its scope name, spans per
// failed call, and the token attributes on a streamed chat span (with include_usage).
const LIBRARIES = {
  'opentelemetry-instrumentation-openai': { scope: '@opentelemetry/instrumentation-openai', failedCallSpans: 1, streamTokens: ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens'] },
  'openinference-instrumentation-openai': { scope: '@arizeai/openinference-instrumentation-openai', failedCallSpans: 0, streamTokens: [] },
};

function run(lib, env) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(here, lib, 'app.mjs')], { env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    p.stderr.on('data', (d) => (stderr += d));
    p.on('exit', (code) => resolve({ code, stderr }));
  });
}

function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

let tmp;
let fake;
before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fusebox-node-apps-'));
  fs.writeFileSync(path.join(tmp, 'scenario.json'), JSON.stringify(SCENARIO));
  fake = await startFake(path.join(tmp, 'scenario.json'));
});
after(() => {
  fake.proc.removeAllListeners('exit');
  fake.proc.kill();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function env(lib, endpoint, extra = {}) {
  return {
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_API_KEY: 'test',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: endpoint,
    OTEL_SERVICE_NAME: `svc-${lib}`,
    OTEL_RESOURCE_ATTRIBUTES: 'tenant.id=acme',
    FUSEBOX_SCENARIO: path.join(tmp, 'scenario.json'),
    FUSEBOX_MEASUREMENTS: path.join(tmp, `${lib}.jsonl`),
    ...extra,
  };
}

for (const [lib, want] of Object.entries(LIBRARIES)) {
  describe(lib, () => {
    test('makes the calls, measures them and exports their spans', async () => {
      const rec = await startReceiver();
      let res;
      try {
        res = await run(lib, env(lib, `http://127.0.0.1:${rec.port}/v1/traces`));
      } finally {
        rec.server.close();
      }
      assert.equal(res.code, 0, res.stderr);

      const lines = fs.readFileSync(path.join(tmp, `${lib}.jsonl`), 'utf8').trim().split('\n');
      assert.equal(lines.length, SCENARIO.calls.length);
      const ms = lines.map((l) => {
        // start_ns/end_ns must be exact integers, not rounded floats
        const raw = /"start_ns":(\d+),"end_ns":(\d+)/.exec(l);
        assert.ok(raw, `no integer start_ns/end_ns in ${l}`);
        return { ...JSON.parse(l), start: BigInt(raw[1]), end: BigInt(raw[2]) };
      });
      assert.deepEqual(ms.map((m) => m.id), SCENARIO.calls.map((c) => c.id));
      assert.deepEqual(ms.map((m) => m.http_status), [200, 200, 429, 500, 200, 200]);
      assert.deepEqual(ms.map((m) => m.error), [false, false, true, true, false, false]);
      assert.deepEqual(ms.map((m) => m.stream), [false, true, false, true, false, true]);
      assert.deepEqual(ms.map((m) => m.operation), ['chat', 'chat', 'chat', 'chat', 'embeddings', 'chat']);
      assert.deepEqual(ms.map((m) => m.finish_reason), ['stop', 'stop', null, null, null, 'length']);
      assert.deepEqual(ms.map((m) => [m.input_tokens, m.output_tokens]), [[3, 5], [7, 4], [null, null], [null, null], [7, null], [7, 8]]);
      assert.equal(ms[0].ttft_ms, null);
      assert.ok(ms[1].ttft_ms >= 60, `stream ttft ${ms[1].ttft_ms} ms < the fake's 60 ms`);
      assert.ok(ms[5].ttft_ms > 0);
      for (const m of ms) {
        assert.ok(m.end > m.start, `${m.id}: end ${m.end} <= start ${m.start}`);
        if (m.ttft_ms !== null) assert.ok(m.ttft_ms * 1e6 <= Number(m.end - m.start), `${m.id}: ttft after end`);
      }

      const spans = rec.bodies.flatMap((b) => decodeTraces(b));
      // A span belongs to the last call started (less 1.5 ms: span starts
      // are whole ms) before it; calls run one at a time.
      const owner = (s) => ms.filter((m) => m.start - 1_500_000n <= s.start_ns).at(-1)?.id;
      for (const s of spans) {
        assert.equal(s.resource['tenant.id'], 'acme');
        assert.equal(s.resource['service.name'], `svc-${lib}`);
        assert.equal(s.scope.name, want.scope);
      }
      for (const c of SCENARIO.calls) {
        const own = spans.filter((s) => owner(s) === c.id);
        const failed = c.status === 429 || c.status === 500;
        assert.equal(own.length, failed ? want.failedCallSpans : 1, `${c.id}: ${own.length} span(s)`);
        for (const s of own) {
          assert.equal(s.attributes['deployment.variant'], c.variant || undefined, `${c.id}: variant`);
          if (failed) assert.equal(s.status.code, 'ERROR', `${c.id}: status`);
        }
      }
      const streamed = spans.find((s) => owner(s) === 'stream');
      const tokenKeys = Object.keys(streamed.attributes).filter((k) => k.startsWith('gen_ai.usage.') || k.startsWith('llm.token_count.'));
      assert.deepEqual(tokenKeys.sort(), want.streamTokens, 'token attributes on the streamed span');
    });

    test('a missing variable is bad input, exit 2, naming it', async () => {
      const e = env(lib, 'http://127.0.0.1:9/v1/traces');
      delete e.FUSEBOX_SCENARIO;
      const res = await run(lib, e);
      assert.equal(res.code, 2);
      assert.match(res.stderr, /FUSEBOX_SCENARIO is not set/);
    });

    test('no tenant.id on the resource is bad input, exit 2', async () => {
      const res = await run(lib, env(lib, 'http://127.0.0.1:9/v1/traces', { OTEL_RESOURCE_ATTRIBUTES: 'team=x' }));
      assert.equal(res.code, 2);
      assert.match(res.stderr, /the resource has no tenant\.id/);
    });

    test('spans the receiver never got fail the app, exit 1', async () => {
      const port = await closedPort();
      const res = await run(lib, env(lib, `http://127.0.0.1:${port}/v1/traces`));
      assert.equal(res.code, 1, res.stderr);
      assert.match(res.stderr, /span export to http:\/\/127\.0\.0\.1:\d+\/v1\/traces failed/);
    });
  });
}
