"""The conformance app of openlit (README.md, "The app contract"). openlit
1.45.0 pins openai<3, so this venv has openai 2.x. openlit.init reuses a
tracer provider that is already set (it logs "Detected existing
TracerProvider, reusing it"): the app sets up the SDK provider a team
would (tenant.id from OTEL_RESOURCE_ATTRIBUTES on the resource; the
variant from W3C baggage copied onto spans by appkit's span processor)
and then calls openlit.init with its defaults but metrics, which go
elsewhere than fusebox reads."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import appkit  # noqa: E402

import openlit  # noqa: E402

tp = appkit.sdk_tracer_provider()
openlit.init(service_name=os.environ["OTEL_SERVICE_NAME"], disable_metrics=True)
sys.exit(appkit.run(tp.shutdown))
