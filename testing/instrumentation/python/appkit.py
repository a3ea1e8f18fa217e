"""What every Python app of the conformance suite shares (README.md, "The
app contract"): reading the scenario, making the calls with the official
openai client, measuring them, and the span processor that copies the
W3C baggage entry deployment.variant onto every span started under it (how
a team puts a canary variant on its spans). Each app sets up its library's
instrumentation and then calls run(). Standard library and openai only, so
it runs in every library's venv.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

VARIANT_ATTR = "deployment.variant"  # fusebox's default variant attribute


def baggage_variant_processor() -> Any:
    """A SpanProcessor that copies baggage deployment.variant onto each span
    at its start (imported late: the OpenTelemetry SDK is the app's)."""
    from opentelemetry import baggage
    from opentelemetry.sdk.trace import SpanProcessor

    class BaggageVariant(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            v = baggage.get_baggage(VARIANT_ATTR, parent_context)
            if v:
                span.set_attribute(VARIANT_ATTR, str(v))

    return BaggageVariant()


@contextmanager
def variant_baggage(variant: str) -> Iterator[None]:
    """Runs the block with baggage deployment.variant=variant (none when "")."""
    if not variant:
        yield
        return
    from opentelemetry import baggage, context

    token = context.attach(baggage.set_baggage(VARIANT_ATTR, variant))
    try:
        yield
    finally:
        context.detach(token)


def _status(e: BaseException) -> int:
    code = getattr(e, "status_code", None)
    return int(code) if isinstance(code, int) else 0


def _call(client: Any, c: dict[str, Any]) -> dict[str, Any]:
    headers = {"x-fusebox-call": c["id"]}
    m: dict[str, Any] = {"id": c["id"], "model": c["model"], "operation": c["operation"],
                         "stream": bool(c.get("stream")), "http_status": 200, "error": False,
                         "ttft_ms": None, "input_tokens": None, "output_tokens": None, "finish_reason": None}
    start = time.time_ns()
    try:
        if c["operation"] == "embeddings":
            r = client.embeddings.create(model=c["model"], input="some text", extra_headers=headers)
            if r.usage is not None:
                m["input_tokens"] = r.usage.prompt_tokens
        elif c.get("stream"):
            s = client.chat.completions.create(
                model=c["model"], messages=[{"role": "user", "content": "say something"}],
                max_tokens=c.get("max_tokens", 32), stream=True, stream_options={"include_usage": True},
                extra_headers=headers)
            for chunk in s:
                for ch in chunk.choices:
                    if ch.delta is not None and ch.delta.content and m["ttft_ms"] is None:
                        m["ttft_ms"] = (time.time_ns() - start) / 1e6
                    if ch.finish_reason:
                        m["finish_reason"] = ch.finish_reason
                if chunk.usage is not None:
                    m["input_tokens"] = chunk.usage.prompt_tokens
                    m["output_tokens"] = chunk.usage.completion_tokens
        else:
            r = client.chat.completions.create(
                model=c["model"], messages=[{"role": "user", "content": "say something"}],
                max_tokens=c.get("max_tokens", 32), extra_headers=headers)
            m["finish_reason"] = r.choices[0].finish_reason if r.choices else None
            if r.usage is not None:
                m["input_tokens"] = r.usage.prompt_tokens
                m["output_tokens"] = r.usage.completion_tokens
    except Exception as e:  # the contract: an answered 429/500 is measured, not fatal
        status = _status(e)
        if status not in (429, 500):
            raise
        m["http_status"], m["error"] = status, True
    m["start_ns"], m["end_ns"] = start, time.time_ns()
    return m


def run(shutdown: Callable[[], None], wrap: Callable[[dict[str, Any]], Any] | None = None) -> int:
    """Makes the scenario's calls in order, writes the measurements, then
    calls shutdown (flush and shut down the tracer provider). wrap, if
    given, returns a context manager to run each call in (the default puts
    the variant in baggage)."""
    from openai import OpenAI

    with open(os.environ["FUSEBOX_SCENARIO"]) as f:
        calls: list[dict[str, Any]] = json.load(f)["calls"]
    client = OpenAI(base_url=os.environ["OPENAI_BASE_URL"], api_key=os.environ["OPENAI_API_KEY"], max_retries=0)
    with open(os.environ["FUSEBOX_MEASUREMENTS"], "w") as out:
        for c in calls:
            ctx = wrap(c) if wrap else variant_baggage(str(c.get("variant") or ""))
            with ctx:
                m = _call(client, c)
            out.write(json.dumps(m) + "\n")
            out.flush()
    shutdown()
    print(f"made {len(calls)} calls", file=sys.stderr)
    return 0


def sdk_tracer_provider() -> Any:
    """The SDK tracer provider a team sets up: the resource from
    OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (tenant.id), the
    baggage-variant processor, and the OTLP/HTTP protobuf exporter to
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT behind a batch processor. Installed
    as the global provider."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    tp = TracerProvider(resource=Resource.create())
    tp.add_span_processor(baggage_variant_processor())
    tp.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(), schedule_delay_millis=200))
    trace.set_tracer_provider(tp)
    return tp
