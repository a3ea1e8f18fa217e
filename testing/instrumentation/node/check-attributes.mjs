#!/usr/bin/env node
// check-attributes.mjs: runs every Node.js app (node/*/app.mjs) against the
// suite's fake OpenAI server (../fakeopenai.py, python3 stdlib) with a fixed
// scenario, receives the spans over OTLP/HTTP protobuf itself, and prints
// per library and call what the spans carry: name, kind, status, attributes,
// events (ms after the span start), the span's duration next to the app's
// own, and per fusebox field which attributes carry it. It is how the table
// in README.md was written; run it after `npm ci`:
//
//   node check-attributes.mjs            # all apps
//   node check-attributes.mjs openinference-instrumentation-openai
//
// Exit 1 when an app fails or sends no span. No Kafka and no fusebox here:
// the driver (../driver) does that part.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeTraces } from './otlp-decode.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

/** The scenario: one call of each kind the suite asserts on. */
const SCENARIO = {
  calls: [
    { id: 'plain', model: 'gpt-4o-mini', operation: 'chat', stream: false, variant: 'canary', max_tokens: 32 },
    { id: 'stream', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: '', max_tokens: 32, ttft_ms: 150, chunk_delay_ms: 10 },
    { id: 'r429', model: 'gpt-4o-mini', operation: 'chat', stream: false, variant: '', max_tokens: 32, status: 429 },
    { id: 'r500', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: 'canary', max_tokens: 32, status: 500 },
    { id: 'emb', model: 'text-embedding-3-small', operation: 'embeddings', stream: false, variant: '', max_tokens: 0 },
    { id: 'length', model: 'gpt-4o-mini', operation: 'chat', stream: true, variant: '', max_tokens: 32, finish_reason: 'length', output_tokens: 4 },
  ],
};

/** Which attributes may carry each field fusebox reads (any library). */
const FIELDS = {
  model: ['gen_ai.request.model', 'gen_ai.response.model', 'llm.model_name', 'embedding.model_name', 'llm.invocation_parameters'],
  operation: ['gen_ai.operation.name', 'openinference.span.kind'],
  streaming: ['gen_ai.request.stream', 'gen_ai.is_streaming', 'llm.is_streaming'],
  ttft: ['gen_ai.response.time_to_first_chunk', 'gen_ai.response.time_to_first_token', 'gen_ai.server.time_to_first_token'],
  tokens: ['gen_ai.usage.input_tokens', 'gen_ai.usage.output_tokens', 'llm.token_count.prompt', 'llm.token_count.completion', 'llm.token_count.total'],
  error: ['error.type', 'exception.type'],
  provider: ['gen_ai.provider.name', 'gen_ai.system', 'llm.system', 'llm.provider'],
  finish: ['gen_ai.response.finish_reasons', 'llm.finish_reason'],
  variant: ['deployment.variant'],
};

/** startFake runs ../fakeopenai.py on a free port; resolves {proc, baseUrl}. */
export function startFake(scenarioPath) {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', [path.join(here, '..', 'fakeopenai.py'), scenarioPath], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.on('error', reject);
    p.on('exit', (code) => reject(new Error(`fakeopenai.py exited ${code} before listening`)));
    p.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve({ proc: p, baseUrl: m[1] });
    });
  });
}

/** startReceiver is an OTLP/HTTP receiver on a free port keeping each body. */
export function startReceiver() {
  const bodies = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        bodies.push(Buffer.concat(chunks));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else res.writeHead(404).end();
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, bodies, port: server.address().port })));
}

/** runApp runs node <lib>/app.mjs with env added; resolves its exit code. */
export function runApp(lib, env) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(here, lib, 'app.mjs')], { env: { ...process.env, ...env }, stdio: ['ignore', 'inherit', 'inherit'] });
    p.on('exit', (code) => resolve(code));
  });
}

const short = (v) => {
  const s = typeof v === 'string' ? v : JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
};

async function checkLibrary(lib, fake, tmp) {
  const rec = await startReceiver();
  const measurements = path.join(tmp, `${lib}.jsonl`);
  const code = await runApp(lib, {
    OPENAI_BASE_URL: fake.baseUrl,
    OPENAI_API_KEY: 'test',
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${rec.port}/v1/traces`,
    OTEL_SERVICE_NAME: `check-${lib}`,
    OTEL_RESOURCE_ATTRIBUTES: 'tenant.id=acme',
    FUSEBOX_SCENARIO: path.join(tmp, 'scenario.json'),
    FUSEBOX_MEASUREMENTS: measurements,
  });
  rec.server.close();
  const spans = rec.bodies.flatMap((b) => decodeTraces(b)).sort((a, b) => (a.start_ns < b.start_ns ? -1 : 1));
  const ms = fs.readFileSync(measurements, 'utf8').trim().split('\n').filter(Boolean).map((l) => {
    const m = JSON.parse(l.replace(/"(start|end)_ns":(\d+)/g, '"$1_ns":"$2"'));
    return { ...m, start_ns: BigInt(m.start_ns), end_ns: BigInt(m.end_ns) };
  });
  console.log(`\n## ${lib} (app exit ${code}, ${spans.length} span(s) for ${ms.length} call(s))`);
  if (spans[0]) {
    console.log(`scope ${spans[0].scope.name} ${spans[0].scope.version}; resource ${JSON.stringify(spans[0].resource)}`);
  }
  // A span belongs to the last call that started (less 1.5 ms: the SDK
  // stamps a span's start from Date.now(), whole ms) before it: calls run
  // one at a time.
  const slack = 1_500_000n;
  const owner = (s) => ms.filter((m) => m.start_ns - slack <= s.start_ns).at(-1)?.id;
  const seen = {};
  for (const m of ms) {
    const own = spans.filter((s) => owner(s) === m.id);
    const appMs = Number(m.end_ns - m.start_ns) / 1e6;
    if (own.length === 0) {
      console.log(`- ${m.id} (http ${m.http_status}, app ${appMs.toFixed(2)} ms, ttft ${m.ttft_ms?.toFixed(1) ?? '-'} ms): NO SPAN`);
      continue;
    }
    for (const s of own) {
      const startDiff = Number(s.start_ns - m.start_ns) / 1e6;
      console.log(
        `- ${m.id} (http ${m.http_status}, app ${appMs.toFixed(2)} ms, ttft ${m.ttft_ms?.toFixed(1) ?? '-'} ms): ` +
          `span "${s.name}" ${s.kind} status ${s.status.code}${s.status.message ? ` "${s.status.message}"` : ''}, ` +
          `${s.duration_ms.toFixed(2)} ms (span - app: ${(s.duration_ms - appMs).toFixed(2)} ms, start ${startDiff.toFixed(2)} ms)`,
      );
      console.log(`    attributes: ${Object.entries(s.attributes).map(([k, v]) => `${k}=${short(v)}`).join(', ')}`);
      if (s.events.length > 0) {
        console.log(`    events: ${s.events.map((e) => `${e.name}@${e.after_start_ms.toFixed(1)}ms ${JSON.stringify(e.attributes)}`).join('; ')}`);
      }
      for (const [field, keys] of Object.entries(FIELDS)) {
        for (const k of keys) {
          if (k in s.attributes) ((seen[field] ??= {})[k] ??= []).push(m.id);
        }
      }
      if (s.status.code === 'ERROR') ((seen.error ??= {})['status ERROR'] ??= []).push(m.id);
      if (s.events.length > 0) ((seen.events ??= {})[[...new Set(s.events.map((e) => e.name))].join('|')] ??= []).push(m.id);
    }
  }
  console.log('fields:');
  for (const field of [...Object.keys(FIELDS), 'events']) {
    const got = seen[field];
    console.log(`  ${field}: ${got ? Object.entries(got).map(([k, ids]) => `${k} (${ids.join(' ')})`).join('; ') : 'not emitted'}`);
  }
  return code === 0 && spans.length > 0;
}

async function main() {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fusebox-node-check-'));
  fs.writeFileSync(path.join(tmp, 'scenario.json'), JSON.stringify(SCENARIO));
  const libs = process.argv.slice(2).length > 0
    ? process.argv.slice(2)
    : fs.readdirSync(here).filter((d) => fs.existsSync(path.join(here, d, 'app.mjs'))).sort();
  const fake = await startFake(path.join(tmp, 'scenario.json'));
  let ok = true;
  try {
    for (const lib of libs) ok = (await checkLibrary(lib, fake, tmp)) && ok;
  } finally {
    fake.proc.removeAllListeners('exit');
    fake.proc.kill();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  process.exitCode = ok ? 0 : 1;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
