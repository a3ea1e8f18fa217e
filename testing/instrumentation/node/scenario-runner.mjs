// scenario-runner.mjs: what both Node.js conformance apps share (the
// harness discovers apps by the directories holding an app.mjs; this file is
// not one). Each app does only what differs per library: it builds its
// instrumentation, calls startTracing, loads openai, calls runScenario.
//
// The app contract (docs/testing.md, issue 23 contract 2) in short: env
// OPENAI_BASE_URL, OPENAI_API_KEY, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES (tenant.id=...),
// FUSEBOX_SCENARIO (JSON {"calls": [...]}) and FUSEBOX_MEASUREMENTS (one
// JSON line per call written here). Exit 0 when every call was made (a 429
// or 500 answer is a made call), 1 when a call could not be made or a span
// export failed, 2 on bad input (a missing variable, an unreadable
// scenario).

import fs from 'node:fs';
import { createRequire } from 'node:module';
import { context, diag, DiagConsoleLogger, DiagLogLevel, propagation } from '@opentelemetry/api';
import { BaggageSpanProcessor } from '@opentelemetry/baggage-span-processor';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

/** The span attribute fusebox reads the variant from by default. */
export const VARIANT_KEY = 'deployment.variant';

/** The resource attribute fusebox reads the tenant from by default. */
export const TENANT_KEY = 'tenant.id';

/** BadInput is a mistake in the app's environment or scenario (exit 2). */
export class BadInput extends Error {}

function requireEnv(name) {
  const v = process.env[name];
  if (v === undefined || v === '') {
    throw new BadInput(`environment variable ${name} is not set (the app contract needs it)`);
  }
  return v;
}

/**
 * CountingExporter wraps an exporter and counts failed exports, so that a
 * span batch the receiver refused makes the app exit 1 instead of being
 * logged and forgotten (the SDK's own default is to drop it silently).
 */
class CountingExporter {
  constructor(inner) {
    this.inner = inner;
    this.failed = 0;
    this.lastError = undefined;
  }
  export(spans, done) {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS) {
        this.failed += spans.length;
        this.lastError = result.error;
      }
      done(result);
    });
  }
  shutdown() {
    return this.inner.shutdown();
  }
  forceFlush() {
    return this.inner.forceFlush ? this.inner.forceFlush() : Promise.resolve();
  }
}

/**
 * startTracing sets up the OpenTelemetry SDK the way a team would, then
 * enables the given instrumentations. It must run BEFORE openai is loaded
 * (see loadOpenAI for why that alone is not enough under ESM).
 *
 * - Resource: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES through the
 *   SDK's own envDetector (so tenant.id lands on the resource, where
 *   fusebox reads it); a resource without tenant.id is an error here.
 * - Variant: W3C baggage entry deployment.variant, copied onto every span
 *   started in that context by the contrib BaggageSpanProcessor (only that
 *   key, so no other baggage leaks onto spans).
 * - Export: OTLP/HTTP protobuf to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the
 *   full URL, used as is) through a BatchSpanProcessor; shutdown() flushes.
 *
 * @returns {{provider: NodeTracerProvider, exporter: CountingExporter}}
 */
export function startTracing(instrumentations) {
  // Export failures and instrumentation problems go to stderr, where the
  // harness shows them; the SDK's default logger prints nothing.
  diag.setLogger(new DiagConsoleLogger(), DiagLogLevel.WARN);

  const url = requireEnv('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const serviceName = requireEnv('OTEL_SERVICE_NAME');
  const detected = detectResources({ detectors: [envDetector] });
  const resource = resourceFromAttributes({ 'service.name': serviceName }).merge(detected);
  if (resource.attributes[TENANT_KEY] === undefined) {
    throw new BadInput(
      `the resource has no ${TENANT_KEY}: set OTEL_RESOURCE_ATTRIBUTES=${TENANT_KEY}=<tenant> ` +
        `(got ${JSON.stringify(process.env.OTEL_RESOURCE_ATTRIBUTES ?? '')})`,
    );
  }

  const exporter = new CountingExporter(new OTLPTraceExporter({ url }));
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [
      new BaggageSpanProcessor((key) => key === VARIANT_KEY),
      new BatchSpanProcessor(exporter),
    ],
  });
  // register() makes the provider global and installs the AsyncLocalStorage
  // context manager, without which the baggage set around a call would not
  // reach the span the instrumentation starts inside the client.
  provider.register();
  for (const inst of instrumentations) {
    inst.setTracerProvider(provider);
  }
  registerInstrumentations({ instrumentations, tracerProvider: provider });
  return { provider, exporter };
}

/**
 * loadOpenAI loads the openai client through require(), from the app's own
 * directory, after startTracing.
 *
 * Why require and not `import OpenAI from 'openai'` (measured with
 * openai 6.49.0 on Node 20.20, see README.md "ESM and CommonJS"): both
 * instrumentations patch openai from a require-in-the-middle hook, which
 * sees CommonJS require() only. A static ESM import is hoisted above
 * startTracing, and even a dynamic `await import('openai')` after it loads
 * openai's ESM build (package.json "exports" -> .mjs), which that hook
 * never sees: the calls work and no span is written, with no warning. The
 * ESM route needs import-in-the-middle's loader registered before the app
 * (`node --import` of a file calling module.register), and a different one
 * per library (@opentelemetry/instrumentation 0.223 brings
 * import-in-the-middle 3.x, OpenInference's 0.46 brings 1.7.1).
 * createRequire works for both libraries with no node flags, so the apps
 * use it.
 *
 * @param {string} appUrl import.meta.url of the app
 */
export function loadOpenAI(appUrl) {
  const require = createRequire(appUrl);
  return require('openai');
}

/**
 * callClock starts one call's clock the way the SDK stamps a span
 * (SpanImpl in @opentelemetry/sdk-trace 2.x): the start is Date.now() in
 * whole ms, later instants are that start plus performance.now()'s
 * elapsed time. Returns {start_ns, now()}: BigInt Unix ns.
 *
 * Why not performance.timeOrigin + performance.now(): Node takes
 * timeOrigin once, at process start, from two clock reads; a process whose
 * start was preempted between them keeps an offset of several ms against
 * Date.now() for its whole life (measured on the 2-core CI machine: one
 * process in the conformance run had its spans start a few ms before the
 * app's own start for 55 of its 60 calls, while the other Node process
 * matched). Anchoring each call on Date.now(), the SDK's own anchor, leaves
 * only the whole-ms rounding of the span's start (it may start up to 1 ms
 * after the app's start, never before it while the wall clock does not
 * step back) and the clock reads' jitter.
 *
 * Integers throughout: the float sum in ns (about 1.8e18) would be
 * rounded to 256 ns.
 */
function callClock() {
  const startNs = BigInt(Date.now()) * 1_000_000n;
  const p0 = performance.now();
  return {
    start_ns: startNs,
    now: () => startNs + BigInt(Math.round((performance.now() - p0) * 1e6)),
  };
}

function readScenario(path) {
  let text;
  try {
    text = fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new BadInput(`FUSEBOX_SCENARIO ${path}: ${e.message}`);
  }
  let s;
  try {
    s = JSON.parse(text);
  } catch (e) {
    throw new BadInput(`FUSEBOX_SCENARIO ${path}: not JSON: ${e.message}`);
  }
  if (!s || !Array.isArray(s.calls)) {
    throw new BadInput(`FUSEBOX_SCENARIO ${path}: no "calls" array`);
  }
  s.calls.forEach((c, i) => {
    if (typeof c.id !== 'string' || c.id === '') throw new BadInput(`FUSEBOX_SCENARIO ${path}: call ${i} has no "id"`);
    if (typeof c.model !== 'string' || c.model === '') throw new BadInput(`FUSEBOX_SCENARIO ${path}: call ${c.id} has no "model"`);
    if (c.operation !== 'chat' && c.operation !== 'embeddings') {
      throw new BadInput(`FUSEBOX_SCENARIO ${path}: call ${c.id}: operation ${JSON.stringify(c.operation)} is neither "chat" nor "embeddings"`);
    }
  });
  return s;
}

/** measurementLine renders one call's measurement; start_ns and end_ns are
 * BigInts written as exact JSON integers (JSON.stringify refuses BigInts,
 * and a JS number would round them to 256 ns). */
function measurementLine(m) {
  const { start_ns, end_ns, ...rest } = m;
  const head = JSON.stringify(rest);
  return `${head.slice(0, -1)},"start_ns":${start_ns},"end_ns":${end_ns}}\n`;
}

async function chat(client, call, headers, m, clock) {
  const params = {
    model: call.model,
    messages: [{ role: 'user', content: 'say something' }],
  };
  if (call.max_tokens) params.max_tokens = call.max_tokens;
  if (!call.stream) {
    const r = await client.chat.completions.create(params, { headers });
    m.http_status = 200;
    m.input_tokens = r.usage?.prompt_tokens ?? null;
    m.output_tokens = r.usage?.completion_tokens ?? null;
    m.finish_reason = r.choices?.[0]?.finish_reason ?? null;
    return;
  }
  params.stream = true;
  params.stream_options = { include_usage: true };
  const stream = await client.chat.completions.create(params, { headers });
  m.http_status = 200;
  for await (const chunk of stream) {
    const choice = chunk.choices?.[0];
    if (m.ttft_ms === null && choice?.delta?.content) {
      m.ttft_ms = Number(clock.now() - m.start_ns) / 1e6;
    }
    if (choice?.finish_reason) m.finish_reason = choice.finish_reason;
    if (chunk.usage) {
      m.input_tokens = chunk.usage.prompt_tokens ?? null;
      m.output_tokens = chunk.usage.completion_tokens ?? null;
    }
  }
}

async function embeddings(client, call, headers, m) {
  const r = await client.embeddings.create({ model: call.model, input: 'some text' }, { headers });
  m.http_status = 200;
  m.input_tokens = r.usage?.prompt_tokens ?? null;
}

/**
 * runScenario makes the scenario's calls in order with the openai client
 * and writes one measurement line per call, then shuts the provider down
 * (which flushes the batch). Returns the process exit code.
 *
 * The client has maxRetries 0: the fake server answers by call id, so a
 * retried 429/500 would only repeat the same answer, lengthen the call by
 * the client's back-off and put one request per try on the fake server; a
 * team keeps the default (2), the spans are the same per try.
 */
export async function runScenario(openaiModule, tracing) {
  const OpenAI = openaiModule.OpenAI ?? openaiModule.default ?? openaiModule;
  const scenario = readScenario(requireEnv('FUSEBOX_SCENARIO'));
  const outPath = requireEnv('FUSEBOX_MEASUREMENTS');
  const client = new OpenAI({
    baseURL: requireEnv('OPENAI_BASE_URL'),
    apiKey: requireEnv('OPENAI_API_KEY'),
    maxRetries: 0,
  });
  // openai builds client.chat.completions and client.embeddings lazily, on
  // first access (measured: 14.6 ms on a loaded 2-core machine), which
  // would count in the app's first call and not in its span, which starts
  // inside create(). Touch them before any call is timed.
  void client.chat.completions;
  void client.embeddings;
  fs.writeFileSync(outPath, '');

  let notMade = 0;
  for (const call of scenario.calls) {
    const stream = call.operation === 'chat' && call.stream === true;
    const m = {
      id: call.id,
      model: call.model,
      operation: call.operation,
      stream,
      http_status: null,
      error: false,
      ttft_ms: null,
      input_tokens: null,
      output_tokens: null,
      finish_reason: null,
    };
    let ctx = context.active();
    if (call.variant) {
      const bag = propagation.getBaggage(ctx) ?? propagation.createBaggage();
      ctx = propagation.setBaggage(ctx, bag.setEntry(VARIANT_KEY, { value: call.variant }));
    }
    const headers = { 'x-fusebox-call': call.id };
    const clock = callClock();
    m.start_ns = clock.start_ns;
    try {
      await context.with(ctx, () =>
        call.operation === 'chat' ? chat(client, { ...call, stream }, headers, m, clock) : embeddings(client, call, headers, m),
      );
    } catch (e) {
      m.error = true;
      if (e instanceof OpenAI.APIError && typeof e.status === 'number') {
        m.http_status = e.status;
      } else {
        // No HTTP answer (connection refused, a broken stream): the call
        // was not made as the scenario says, which fails the app.
        notMade++;
        process.stderr.write(`call ${call.id}: ${e?.stack ?? e}\n`);
      }
    }
    m.end_ns = clock.now();
    fs.appendFileSync(outPath, measurementLine(m));
  }

  // shutdown() flushes the batch; it rejects when that last export fails.
  let shutdownError;
  try {
    await tracing.provider.shutdown();
  } catch (e) {
    shutdownError = e;
  }
  if (tracing.exporter.failed > 0 || shutdownError) {
    const err = tracing.exporter.lastError ?? shutdownError;
    process.stderr.write(
      `span export to ${process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT} failed for ${tracing.exporter.failed} span(s): ${err?.message ?? 'unknown error'}\n`,
    );
    return 1;
  }
  if (notMade > 0) {
    process.stderr.write(`${notMade} of ${scenario.calls.length} call(s) got no HTTP answer\n`);
    return 1;
  }
  return 0;
}

/**
 * main runs an app: setup() builds the instrumentations, startTracing runs,
 * then openai is loaded and the scenario made. Bad input exits 2 with a
 * message naming what is wrong.
 */
export async function main(appUrl, makeInstrumentations) {
  try {
    const tracing = startTracing(makeInstrumentations());
    const openai = loadOpenAI(appUrl);
    process.exitCode = await runScenario(openai, tracing);
  } catch (e) {
    if (e instanceof BadInput) {
      process.stderr.write(`bad input: ${e.message}\n`);
      process.exitCode = 2;
      return;
    }
    throw e;
  }
}
