"""The conformance app of Arize's openinference-instrumentation-openai
(README.md, "The app contract"): the SDK tracer provider a team sets up
(tenant.id from OTEL_RESOURCE_ATTRIBUTES on the resource; the variant from
W3C baggage copied onto spans by appkit's span processor), then the
instrumentor."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import appkit  # noqa: E402

from openinference.instrumentation.openai import OpenAIInstrumentor  # noqa: E402

tp = appkit.sdk_tracer_provider()
OpenAIInstrumentor().instrument(tracer_provider=tp)
sys.exit(appkit.run(tp.shutdown))
