// The conformance app for @opentelemetry/instrumentation-openai (the
// OpenTelemetry contrib library, the most installed one). Run by the
// harness as `node app.mjs` with the contract's environment (see
// ../scenario-runner.mjs and ../README.md).
//
// Registration order matters: main() enables the instrumentation first and
// only then loads openai, through require() (createRequire), because the
// instrumentation patches openai from a CommonJS require hook; a static
// `import OpenAI from 'openai'` here would be hoisted above the setup and
// load openai's ESM build, which the hook never sees (no spans, no warning).
import { OpenAIInstrumentation } from '@opentelemetry/instrumentation-openai';
import { main } from '../scenario-runner.mjs';

await main(import.meta.url, () => [
  // captureMessageContent stays false (its default): fusebox never stores
  // prompt or completion content, and a team should not send it.
  new OpenAIInstrumentation({ captureMessageContent: false }),
]);
