// The conformance app for @arizeai/openinference-instrumentation-openai
// (OpenInference, llm.* attributes). Run by the harness as `node app.mjs`
// with the contract's environment (see ../scenario-runner.mjs and
// ../README.md).
//
// Registration order matters: main() enables the instrumentation first and
// only then loads openai, through require() (createRequire), because the
// instrumentation patches openai from a CommonJS require hook; a static
// `import OpenAI from 'openai'` here would be hoisted above the setup and
// load openai's ESM build, which the hook never sees (no spans, no warning).
// OpenInference's other documented way for ESM, manuallyInstrument(OpenAI)
// on the imported module, is not needed then.
import { OpenAIInstrumentation } from '@arizeai/openinference-instrumentation-openai';
import { main } from '../scenario-runner.mjs';

await main(import.meta.url, () => [
  // hideInputs/hideOutputs/hideEmbeddingVectors: fusebox never stores
  // prompt or completion content, and a team sending spans to it should not
  // either. (4.2.7 still writes embedding.embeddings.N.embedding.text, the
  // embedded input, whatever the config says: see README.md.)
  new OpenAIInstrumentation({ traceConfig: { hideInputs: true, hideOutputs: true, hideEmbeddingVectors: true } }),
]);
