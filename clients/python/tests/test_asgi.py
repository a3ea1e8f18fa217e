"""FuseMiddleware (pure ASGI) in a Starlette app, deciding with a real
Client fed signed commands, and end to end on kfake with commands Go signed."""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from conftest import Broker, wait_for
from fusebox_fuse import Client, FuseCommand, Key, Reason, parse_keyring
from fusebox_fuse.asgi import Applied, Counters, FuseMiddleware, fnv1a64
from fusebox_fuse.kafka import ConfluentSource

SECRET = "ab" * 32
RING = parse_keyring(f"k1:{SECRET}")
NOW = 1_800_000_000 * 10**9
MIN = 60 * 10**9
MODEL = "gpt-4o"
KEY = Key("acme", "chat", MODEL, "canary")
seen: list[dict[str, Any]] = []


async def upstream(request: Request) -> Response:
    body = await request.body()
    a: Applied | None = request.scope.get("fusebox")
    try:
        parsed = json.loads(body) if body else None
    except ValueError:
        parsed = None
    seen.append({"body": parsed, "headers": dict(request.headers), "applied": a, "len": len(body)})
    return JSONResponse({"ok": True})


async def stream(request: Request) -> Response:
    await request.body()

    async def gen() -> Any:
        for i in range(5):
            yield f"data: {{\"chunk\": {i}, \"t\": {time.monotonic()}}}\n\n".encode()
            await asyncio.sleep(0.05)
        yield b"data: [DONE]\n\n"

    return StreamingResponse(gen(), media_type="text/event-stream")


inner = Starlette(routes=[Route("/v1/chat/completions", upstream, methods=["POST", "GET"]),
                          Route("/v1/embeddings", upstream, methods=["POST"]),
                          Route("/v1/responses", stream, methods=["POST"]),
                          Route("/other", upstream, methods=["POST"])])


def client_with(*cmds: FuseCommand) -> Client:
    c = Client(keyring=RING, clock=lambda: NOW)
    for cmd in cmds:
        assert c.handle(RING.sign(cmd).encode()) == "applied"
    return c


def cmd(target: Key, action: str, *, state: str = "open", level: int = 2, version: int = 1, fallback: str = "",
        fraction: float = 0.0, ttl: int = 10 * MIN, text: str = "p99.9 latency over budget") -> FuseCommand:
    return FuseCommand(target=target, action=action, level=level, state=state, version=version,
                       issued_at_unix_nano=NOW - MIN, expires_at_unix_nano=NOW - MIN + ttl, fallback=fallback,
                       throttle_fraction=fraction, reasons=(Reason("v1", text),))


def app_for(decider: Client, **kw: Any) -> tuple[TestClient, Counters]:
    counters = Counters()
    mw = FuseMiddleware(inner, decider, metrics=counters, clock=lambda: NOW, **kw)
    return TestClient(mw), counters


def post(tc: TestClient, body: dict[str, Any] | bytes | None = None, path: str = "/v1/chat/completions",
         **headers: str) -> Any:
    h = {"x-fusebox-tenant": "acme", "x-fusebox-service": "chat", "x-fusebox-variant": "canary", **headers}
    if isinstance(body, bytes):
        return tc.post(path, content=body, headers=h)
    return tc.post(path, json=body if body is not None else {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]},
                   headers=h)


@pytest.fixture(autouse=True)
def _clear() -> None:
    seen.clear()


def test_nothing_in_effect_passes_untouched() -> None:
    tc, counters = app_for(client_with())
    r = post(tc)
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "pass"
    assert seen[0]["body"]["model"] == MODEL and seen[0]["applied"].key == KEY
    assert counters.get("pass") == 1


def test_trip_is_503_with_retry_after_and_openai_error() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "trip", ttl=10 * MIN + 1)))
    r = post(tc)
    assert r.status_code == 503 and not seen
    assert r.headers["retry-after"] == str(math.ceil((9 * MIN + 1) / 1e9))
    assert r.headers["content-type"] == "application/json" and r.headers["x-fusebox-decision"] == "reject"
    err = r.json()["error"]
    assert err["type"] == "server_error" and err["code"] == "circuit_open"
    assert err["message"] == "fusebox tripped acme/chat/gpt-4o/canary (command v1, open): p99.9 latency over budget"
    assert r.content.endswith(b"}\n") and int(r.headers["content-length"]) == len(r.content)
    assert counters.get("reject") == 1
    # Another model of the tenant is not tripped.
    assert post(tc, {"model": "other"}).status_code == 200


def test_degrade_rewrites_body_and_model_header() -> None:
    tc, counters = app_for(client_with(cmd(Key("*", "*", MODEL, "*"), "degrade", level=1, fallback="gpt-4o-mini")))
    r = post(tc, {"model": MODEL, "stream": False, "messages": [{"role": "user", "content": "é <&>"}]})
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "degrade"
    s = seen[-1]
    assert s["body"] == {"model": "gpt-4o-mini", "stream": False, "messages": [{"role": "user", "content": "é <&>"}]}
    assert int(s["headers"]["content-length"]) == s["len"]
    assert s["applied"].key.model == "gpt-4o-mini" and s["applied"].requested.model == MODEL
    # The model from a header: the header is rewritten too.
    r = post(tc, {"model": MODEL}, **{"x-fusebox-model": MODEL})
    assert seen[-1]["headers"]["x-fusebox-model"] == "gpt-4o-mini" and seen[-1]["body"]["model"] == "gpt-4o-mini"
    assert counters.get("degrade") == 2


def test_throttle_refuses_the_fraction_with_429() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "throttle", level=1, fraction=0.25)))
    codes = [post(tc).status_code for _ in range(200)]
    admitted = codes.count(200)
    assert set(codes) == {200, 429}
    # n*phi mod 1 is equidistributed: within 2 of the exact share.
    assert abs(admitted - 50) <= 2, admitted
    assert counters.get("admit") == admitted and counters.get("throttle") == 200 - admitted
    r = next(r for r in (post(tc) for _ in range(10)) if r.status_code == 429)
    assert r.headers["retry-after"] == "1" and r.json()["error"]["code"] == "rate_limit_exceeded"
    assert r.json()["error"]["message"] == "fusebox throttles acme/chat/gpt-4o/canary to 25% of requests (command v1): retry later"
    # A request id samples by hash: the same id always gets the same answer.
    for rid in ("req-1", "req-2", "req-3", "req-4"):
        want = 200 if (fnv1a64(rid.encode()) >> 11) / (1 << 53) < 0.25 else 429
        assert {post(tc, **{"x-request-id": rid}).status_code for _ in range(3)} == {want}


def test_half_open_admits_the_probe_fraction() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "half_open", state="half_open", fraction=0.1)))
    codes = [post(tc).status_code for _ in range(300)]
    assert abs(codes.count(200) - 30) <= 2 and codes.count(503) == 300 - codes.count(200)
    assert counters.get("probe") == codes.count(200)
    assert all(s["applied"].label == "probe" and s["body"]["model"] == MODEL for s in seen)


def test_rollback_routes_to_the_baseline() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "rollback", level=1)),
                           rollback_model=lambda model, base: model + "-" + base)
    r = post(tc)
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "rollback"
    assert seen[-1]["headers"]["x-fusebox-variant"] == "baseline" and seen[-1]["body"]["model"] == "gpt-4o-baseline"
    assert seen[-1]["applied"].key == Key("acme", "chat", "gpt-4o-baseline", "baseline")
    tc2, _ = app_for(client_with(cmd(KEY, "rollback", level=1, fallback="stable")))
    post(tc2)
    assert seen[-1]["headers"]["x-fusebox-variant"] == "stable" and seen[-1]["body"]["model"] == MODEL
    # The variant known from default_key alone (no variant header): the
    # baseline's header is set for the upstream all the same (as fusehttp).
    tc3, _ = app_for(client_with(cmd(KEY, "rollback", level=1)), default_key=Key("", "", "", "canary"))
    r = tc3.post("/v1/chat/completions", json={"model": MODEL},
                 headers={"x-fusebox-tenant": "acme", "x-fusebox-service": "chat"})
    assert r.headers["x-fusebox-decision"] == "rollback"
    assert seen[-1]["headers"].get("x-fusebox-variant") == "baseline"


def test_a_chunked_body_is_passed_with_one_framing() -> None:
    # The body is reassembled whole: the upstream sees its Content-Length
    # and no Transfer-Encoding beside it (RFC 9112 forbids both).
    tc, _ = app_for(client_with(cmd(KEY, "degrade", fallback="gpt-4o-mini")))
    raw = json.dumps({"model": MODEL, "messages": []}).encode()
    h = {"x-fusebox-tenant": "acme", "x-fusebox-service": "chat", "x-fusebox-variant": "canary"}
    r = tc.post("/v1/chat/completions", content=iter([raw[:10], raw[10:]]), headers=h)
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "degrade"
    got = seen[-1]
    assert "transfer-encoding" not in got["headers"], got["headers"]
    assert got["headers"]["content-length"] == str(got["len"]) and got["body"]["model"] == "gpt-4o-mini"


def test_failover_sends_a_trip_elsewhere() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "trip")), failover=lambda key, d: "claude-sonnet")
    r = post(tc)
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "failover"
    assert seen[-1]["body"]["model"] == "claude-sonnet" and counters.get("failover") == 1


def test_too_large_unkeyed_and_unjudged() -> None:
    tc, counters = app_for(client_with(cmd(KEY, "trip")), max_body_bytes=64)
    r = post(tc, {"model": MODEL, "pad": "x" * 100})
    assert r.status_code == 413 and r.json()["error"]["code"] == "request_too_large" and not seen
    # No model and a body that is not JSON: passed as asked (fail open).
    r = post(tc, b"not json")
    assert r.status_code == 200 and r.headers["x-fusebox-decision"] == "unkeyed" and seen[-1]["len"] == 8
    # Other paths and methods are not judged (the trip would refuse them).
    assert tc.post("/other", json={"model": MODEL}, headers={"x-fusebox-tenant": "acme"}).status_code == 200
    assert "x-fusebox-decision" not in tc.get("/v1/chat/completions").headers
    assert counters.get("too_large") == 1 and counters.get("unkeyed") == 1 and counters.get("reject") == 0
    assert 'fusebox_gateway_requests_total{decision="too_large"} 1' in counters.render()


def test_bad_options_are_refused() -> None:
    with pytest.raises(ValueError, match="max_body_bytes"):
        FuseMiddleware(inner, client_with(), max_body_bytes=0)
    with pytest.raises(ValueError, match="not a header name"):
        FuseMiddleware(inner, client_with(), request_id_header="bad header")


def test_fnv1a64_matches_go() -> None:
    # hash/fnv New64a: the offset basis for "", and the published value for "a".
    assert fnv1a64(b"") == 0xCBF29CE484222325 and fnv1a64(b"a") == 0xAF63DC4C8601EC8C


def test_streaming_passes_chunks_as_they_come() -> None:
    mw = FuseMiddleware(inner, client_with(cmd(Key("*", "*", MODEL, "*"), "degrade", level=1, fallback="mini")))
    body = json.dumps({"model": MODEL, "stream": True}).encode()
    got: list[tuple[float, dict[str, Any]]] = []

    async def run() -> None:
        msgs = [{"type": "http.request", "body": body[:5], "more_body": True},
                {"type": "http.request", "body": body[5:], "more_body": False}]

        async def receive() -> dict[str, Any]:
            if msgs:
                return msgs.pop(0)
            await asyncio.sleep(3600)
            return {"type": "http.disconnect"}

        async def send(m: Any) -> None:
            got.append((time.monotonic(), dict(m)))

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
                 "scheme": "http", "path": "/v1/responses", "raw_path": b"/v1/responses", "query_string": b"",
                 "root_path": "", "headers": [(b"content-type", b"application/json"),
                                              (b"content-length", str(len(body)).encode())],
                 "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
        await mw(scope, receive, send)

    asyncio.run(run())
    start = got[0][1]
    assert start["type"] == "http.response.start" and start["status"] == 200
    assert (b"x-fusebox-decision", b"degrade") in start["headers"]
    chunks = [(t, m) for t, m in got[1:] if m.get("body")]
    assert len(chunks) == 6 and b"[DONE]" in chunks[-1][1]["body"]
    # Unbuffered: the first chunk left a good while before the last one.
    assert chunks[-1][0] - chunks[0][0] >= 0.2


def test_commands_from_go_change_decisions_live(kfake_broker: Broker, topic: str, publishers: Any,
                                                tmp_path: Path) -> None:
    """End to end: Go signs and publishes, the Python client follows the
    kfake broker, the ASGI app answers accordingly, while requests flow."""
    s = os.urandom(32).hex()
    keys = tmp_path / "k.keys"
    keys.write_text(f"k1:{s}\n")
    pub = publishers(kfake_broker, topic, keys)
    fc = Client(keyring=parse_keyring(f"k1:{s}"), source=ConfluentSource({"bootstrap.servers": kfake_broker.bootstrap}, topic,
                                                                        metadata_interval=0.2))
    fc.start()
    try:
        assert fc.wait_ready(30)
        tc = TestClient(FuseMiddleware(inner, fc))
        assert post(tc).status_code == 200
        now = time.time_ns()

        def publish(action: str, version: int, **kw: Any) -> None:
            c = FuseCommand(target=KEY, action=action, level=kw.pop("level", 2), state=kw.pop("state", "open"),
                            version=version, issued_at_unix_nano=now + version, expires_at_unix_nano=now + 10 * MIN,
                            reasons=(Reason("v", "incident"),), **kw)
            pub.command(json.loads(c.encode()))

        publish("trip", 1)
        wait_for(lambda: post(tc).status_code == 503, 30, "the trip to apply")
        publish("degrade", 2, level=1, fallback="gpt-4o-mini")
        wait_for(lambda: post(tc).status_code == 200 and seen[-1]["body"]["model"] == "gpt-4o-mini", 30, "the degrade")
        publish("close", 3, level=0, state="closed")
        wait_for(lambda: post(tc).status_code == 200 and seen[-1]["body"]["model"] == MODEL, 30, "the close")
    finally:
        fc.stop()
