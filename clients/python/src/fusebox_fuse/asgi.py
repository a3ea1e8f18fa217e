"""ASGI middleware applying fuse decisions to an OpenAI-compatible gateway:
the behaviour of the Go package fuse/fusehttp, in pure ASGI (Starlette,
FastAPI or any ASGI 3 server; no framework needed at runtime).

    from fusebox_fuse.asgi import FuseMiddleware, Counters
    counters = Counters()
    app = FuseMiddleware(app, client, metrics=counters)   # client: fusebox_fuse.Client

Judged requests are POSTs to ``paths`` (default /v1/chat/completions,
/v1/responses, /v1/embeddings). The key comes from the headers
(X-Fusebox-Tenant, -Service, -Model, -Variant over ``default_key``; the model
from its header or the JSON body's "model") or from ``key_func``. Then, with
the decision of ``decider.decide(key)``:

- nothing in effect: passed (label pass);
- degrade: the body's "model" rewritten to the fallback (and the model
  header when the request had one), Content-Length fixed (degrade);
- trip (reject): 503, Retry-After = seconds until the command expires
  (rounded up, at least 1), an OpenAI-style error with code
  "circuit_open" (reject); with ``failover`` the model it names instead
  (failover);
- throttle: the admitted fraction passed (admit), the rest 429 with
  Retry-After: 1 and code "rate_limit_exceeded" (throttle);
- half-open: the probe fraction passed as asked (probe), the rest get the
  command's action;
- rollback: the variant header set to the baseline (the command's fallback,
  else ``baseline``), and with ``rollback_model`` the model rewritten
  (rollback).

A body over ``max_body_bytes`` is answered 413 (too_large); a request without
a usable key passes untouched (unkeyed: fail open). Fractions use one sample
per request in [0, 1): the FNV-1a hash of the request id header, else the
sequence n*phi mod 1, or ``sampler``'s. Responses carry X-Fusebox-Decision;
the handler finds what was done in ``scope["fusebox"]`` (an Applied).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from .client import Decision, Outcome
from .command import Key

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_PATHS: Final = ("/v1/chat/completions", "/v1/responses", "/v1/embeddings")
DEFAULT_MAX_BODY_BYTES: Final = 8 << 20
DEFAULT_REQUEST_ID_HEADER: Final = "x-request-id"
DEFAULT_BASELINE: Final = "baseline"
DEFAULT_METRIC_NAME: Final = "fusebox_gateway_requests_total"

LABELS: Final = ("pass", "admit", "probe", "degrade", "rollback", "failover", "reject", "throttle",
                 "too_large", "unkeyed", "bad_request")
"""What the middleware did with a judged request (fusehttp's Label)."""

PHI: Final = 0.6180339887498949


@dataclass(frozen=True)
class Headers:
    """The request headers the key is read from ("" skips a dimension)."""

    tenant: str = "x-fusebox-tenant"
    service: str = "x-fusebox-service"
    model: str = "x-fusebox-model"
    variant: str = "x-fusebox-variant"


DEFAULT_HEADERS: Final = Headers()


class Decider(Protocol):
    def decide(self, key: Key) -> Decision: ...


@dataclass(frozen=True)
class Applied:
    """What the middleware did: the key as sent (the fallback model after a
    degrade) and as requested, for the span the gateway exports."""

    label: str
    requested: Key = field(default_factory=Key)
    key: Key = field(default_factory=Key)
    decision: Decision = field(default_factory=Decision)


class Counters:
    """Requests by label, thread-safe; render() is the Prometheus text format."""

    def __init__(self, name: str = DEFAULT_METRIC_NAME) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._n = {label: 0 for label in LABELS}

    def count(self, label: str) -> None:
        with self._lock:
            self._n[label] += 1

    def get(self, label: str) -> int:
        with self._lock:
            return self._n[label]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._n)

    def render(self) -> str:
        lines = [f"# HELP {self.name} Gateway requests judged by fusebox's fuse middleware, by decision.",
                 f"# TYPE {self.name} counter"]
        lines += [f'{self.name}{{decision="{k}"}} {v}' for k, v in sorted(self.snapshot().items())]
        return "\n".join(lines) + "\n"


KeyFunc = Callable[[Scope, bytes], Key]
"""Builds the key from the scope and body; raise ValueError for no key."""


class FuseMiddleware:
    """See the module doc. Options are checked once, here."""

    def __init__(self, app: ASGIApp, decider: Decider, *, headers: Headers = DEFAULT_HEADERS,
                 default_key: Key = Key(), paths: Iterable[str] = DEFAULT_PATHS,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, request_id_header: str = DEFAULT_REQUEST_ID_HEADER,
                 baseline: str = DEFAULT_BASELINE, key_func: KeyFunc | None = None,
                 failover: Callable[[Key, Decision], str] | None = None,
                 rollback_model: Callable[[str, str], str] | None = None,
                 sampler: Callable[[Scope], float] | None = None,
                 clock: Callable[[], int] = time.time_ns, metrics: Counters | None = None) -> None:
        errs = []
        if decider is None:
            errs.append("decider is None")
        if max_body_bytes <= 0:
            errs.append(f"max_body_bytes={max_body_bytes}: must be positive")
        for name, h in (("tenant", headers.tenant), ("service", headers.service), ("model", headers.model),
                        ("variant", headers.variant), ("request_id_header", request_id_header)):
            if h and not _valid_header(h):
                errs.append(f"{name} header {h!r} is not a header name")
        if errs:
            raise ValueError("fusebox_fuse.asgi: " + "; ".join(errs))
        self.app = app
        self.decider = decider
        self.headers = Headers(*(h.lower() for h in (headers.tenant, headers.service, headers.model, headers.variant)))
        self.default_key = default_key
        self.paths = frozenset(paths)
        self.max_body_bytes = max_body_bytes
        self.request_id_header = request_id_header.lower().encode("latin-1")
        self.baseline = baseline
        self.key_func = key_func
        self.failover = failover
        self.rollback_model = rollback_model
        self.sampler = sampler
        self.clock = clock
        self.metrics = metrics
        self._seq = itertools.count(1)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST" or scope.get("path") not in self.paths:
            await self.app(scope, receive, send)
            return
        hdrs = _header_dict(scope)
        cl = hdrs.get(b"content-length")
        if cl is not None and cl.isdigit() and int(cl) > self.max_body_bytes:
            await self._refuse(send, "too_large", 413, 0,
                               f"request body is over the gateway's limit of {self.max_body_bytes} bytes",
                               "invalid_request_error", "request_too_large")
            return
        try:
            body = await _read_body(receive, self.max_body_bytes)
        except _TooLarge:
            await self._refuse(send, "too_large", 413, 0,
                               f"request body is over the gateway's limit of {self.max_body_bytes} bytes",
                               "invalid_request_error", "request_too_large")
            return
        except _Disconnected:
            return
        try:
            key = self._key(scope, hdrs, body)
        except ValueError:
            self._count("unkeyed")
            await self._pass(scope, receive, send, body, Applied("unkeyed"), {})
            return
        d = self.decider.decide(key)
        a = Applied("pass", key, key, d)
        set_headers: dict[str, str] = {}
        if not d.matched:
            self._count("pass")
            await self._pass(scope, receive, send, body, a, set_headers)
            return
        outcome = d.admit(self._sample(scope, hdrs))
        cmd = d.command
        assert cmd is not None
        if outcome is Outcome.ALLOW:
            a = replace(a, label="probe" if d.probe else "admit")
        elif outcome is Outcome.DEGRADE:
            a = replace(a, label="degrade")
            if d.fallback and d.fallback != key.model:
                nb = _rewrite_model(body, d.fallback)
                if nb is None:
                    a = replace(a, label="unkeyed")
                else:
                    body = nb
                    a = replace(a, key=replace(a.key, model=d.fallback))
                    self._set(hdrs, set_headers, self.headers.model, d.fallback)
        elif outcome is Outcome.ROLLBACK:
            base = d.fallback or self.baseline
            a = replace(a, label="rollback", key=replace(a.key, variant=base))
            if self.headers.variant:
                # Set even when the variant came from default_key (as fusehttp).
                set_headers[self.headers.variant] = base
            if self.rollback_model is not None:
                to = self.rollback_model(key.model, base)
                if to and to != key.model:
                    nb = _rewrite_model(body, to)
                    if nb is not None:
                        body = nb
                        a = replace(a, key=replace(a.key, model=to))
                        self._set(hdrs, set_headers, self.headers.model, to)
        elif outcome is Outcome.REJECT and d.outcome is Outcome.THROTTLE:
            await self._refuse(send, "throttle", 429, 1,
                               "fusebox throttles %s to %.0f%% of requests (command v%d): retry later"
                               % (_show(cmd.target), 100 * d.fraction, cmd.version),
                               "requests", "rate_limit_exceeded")
            return
        else:  # reject: a trip, or the non-probe share of a half-open target
            to = self.failover(key, d) if self.failover is not None else ""
            nb = _rewrite_model(body, to) if to else None
            if nb is not None:
                body = nb
                a = replace(a, label="failover", key=replace(a.key, model=to))
                self._set(hdrs, set_headers, self.headers.model, to)
            else:
                msg = f"fusebox tripped {_show(cmd.target)} (command v{cmd.version}, {cmd.state})"
                if cmd.reasons and cmd.reasons[0].text:
                    msg += ": " + cmd.reasons[0].text
                await self._refuse(send, "reject", 503, self._retry_after(d), msg, "server_error", "circuit_open")
                return
        self._count(a.label)
        await self._pass(scope, receive, send, body, a, set_headers)

    def _count(self, label: str) -> None:
        if self.metrics is not None:
            self.metrics.count(label)

    def _key(self, scope: Scope, hdrs: dict[bytes, str], body: bytes) -> Key:
        if self.key_func is not None:
            return self.key_func(scope, body)
        h, k = self.headers, self.default_key

        def get(name: str, cur: str) -> str:
            v = hdrs.get(name.encode("latin-1")) if name else None
            return v if v else cur

        model = get(h.model, "")
        if not model and body:
            try:
                obj = json.loads(body)
            except ValueError:
                raise ValueError("fusebox_fuse.asgi: body is not JSON") from None
            if not isinstance(obj, dict):
                raise ValueError("fusebox_fuse.asgi: body is not a JSON object")
            m = obj.get("model")
            model = m if isinstance(m, str) else ""
        k = Key(get(h.tenant, k.tenant), get(h.service, k.service), model or k.model, get(h.variant, k.variant))
        if not k.model:
            raise ValueError("fusebox_fuse.asgi: no model")
        return k

    @staticmethod
    def _set(hdrs: dict[bytes, str], out: dict[str, str], name: str, value: str) -> None:
        # Only a header the request had is rewritten (as fusehttp does).
        if name and hdrs.get(name.encode("latin-1")):
            out[name] = value

    def _sample(self, scope: Scope, hdrs: dict[bytes, str]) -> float:
        if self.sampler is not None:
            u = self.sampler(scope)
            if not (u >= 0):  # also NaN
                return 0.0
            return min(u, math.nextafter(1.0, 0.0))
        rid = hdrs.get(self.request_id_header)
        if rid:
            return (fnv1a64(rid.encode("latin-1")) >> 11) / (1 << 53)
        x = float(next(self._seq)) * PHI
        return x - math.floor(x)

    def _retry_after(self, d: Decision) -> int:
        assert d.command is not None
        left = (d.command.expires_at_unix_nano - self.clock()) / 1e9
        return max(1, math.ceil(left))

    async def _refuse(self, send: Send, label: str, status: int, retry_after: int, msg: str, typ: str, code: str) -> None:
        self._count(label)
        body = _go_json({"error": {"message": msg, "type": typ, "code": code}}) + b"\n"
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                   (b"x-fusebox-decision", label.encode())]
        if retry_after > 0:
            headers.append((b"retry-after", str(retry_after).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def _pass(self, scope: Scope, outer_receive: Receive, send: Send, body: bytes, a: Applied,
                    set_headers: dict[str, str]) -> None:
        new_headers = []
        for k, v in scope.get("headers", []):
            name = k.decode("latin-1").lower()
            # The body is whole now: its length replaces both framings.
            if name in ("content-length", "transfer-encoding") or name in set_headers:
                continue
            new_headers.append((k, v))
        for name, value in set_headers.items():
            new_headers.append((name.encode("latin-1"), value.encode("utf-8")))
        if body or any(k.lower() == b"content-length" for k, _ in scope.get("headers", [])):
            new_headers.append((b"content-length", str(len(body)).encode()))
        inner = dict(scope)
        inner["headers"] = new_headers
        inner["fusebox"] = a
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            # The body was read: the server's receive now only reports the
            # client going away (http.disconnect).
            return await outer_receive()

        label = a.label.encode()

        async def send_with_label(m: Message) -> None:
            if m.get("type") == "http.response.start":
                m = dict(m)
                m["headers"] = list(m.get("headers", [])) + [(b"x-fusebox-decision", label)]
            await send(m)

        await self.app(inner, receive, send_with_label)


class _TooLarge(Exception):
    pass


class _Disconnected(Exception):
    pass


async def _read_body(receive: Receive, limit: int) -> bytes:
    chunks: list[bytes] = []
    n = 0
    while True:
        m = await receive()
        if m["type"] == "http.disconnect":
            raise _Disconnected()
        b = m.get("body", b"")
        n += len(b)
        if n > limit:
            raise _TooLarge()
        chunks.append(b)
        if not m.get("more_body", False):
            return b"".join(chunks)


def _header_dict(scope: Scope) -> dict[bytes, str]:
    out: dict[bytes, str] = {}
    for k, v in scope.get("headers", []):
        kk = bytes(k).lower()
        if kk not in out:  # the first value, as Go's Header.Get
            out[kk] = bytes(v).decode("latin-1")
    return out


def _rewrite_model(body: bytes, model: str) -> bytes | None:
    """body with its top-level "model" set (other members kept, in order);
    None when body is not a JSON object."""
    try:
        obj = json.loads(body) if body else None
    except ValueError:
        return None
    if not isinstance(obj, dict):
        return None
    obj["model"] = model
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _go_json(v: Any) -> bytes:
    """json.dumps as Go's json.Marshal writes it (compact, <>& and U+2028/9 escaped)."""
    s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    for a, b in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(a, b)
    return s.encode("utf-8")


def _show(k: Key) -> str:
    return f"{k.tenant}/{k.service}/{k.model}/{k.variant}"


def fnv1a64(b: bytes) -> int:
    """64-bit FNV-1a (Go's hash/fnv New64a)."""
    h = 0xCBF29CE484222325
    for x in b:
        h ^= x
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


_TOKEN: Final = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _valid_header(h: str) -> bool:
    return bool(h) and all(c in _TOKEN for c in h)


__all__ = ["DEFAULT_HEADERS", "DEFAULT_PATHS", "LABELS", "Applied", "Counters", "Decider", "FuseMiddleware",
           "Headers", "fnv1a64"]
