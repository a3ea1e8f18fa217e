"""A fake OpenAI-compatible server for the instrumentation conformance suite.

Serves POST /v1/chat/completions (plain, or streamed as server-sent events
with controlled time to first chunk and inter-chunk delays) and POST
/v1/embeddings. Each request names its call by the header x-fusebox-call;
the server answers from the call's entry in its scenario (see README.md:
status, ttft_ms, chunk_delay_ms, input_tokens, output_tokens,
finish_reason). Standard library only, so the driver can run it in-process
and an app's venv needs nothing of it.

Run alone: python3 fakeopenai.py SCENARIO.json [PORT] prints
"listening on http://127.0.0.1:PORT/v1".
"""

from __future__ import annotations

import base64
import json
import struct
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from httpbody import read_body

CALL_HEADER = "x-fusebox-call"
FINISH_REASONS = ("stop", "length", "content_filter")


@dataclass(frozen=True)
class Call:
    """What the server answers to one call (README.md, "The fake server")."""

    id: str
    status: int = 200
    ttft_ms: float = 20.0  # ms before the first content chunk (plain: before the answer)
    chunk_delay_ms: float = 5.0  # ms between content chunks
    input_tokens: int = 7
    output_tokens: int = 8  # content chunks sent, one token each
    finish_reason: str = "stop"

    @staticmethod
    def from_json(obj: Mapping[str, Any]) -> Call:
        c = Call(
            id=str(obj["id"]),
            status=int(obj.get("status", 200)),
            ttft_ms=float(obj.get("ttft_ms", 20.0)),
            chunk_delay_ms=float(obj.get("chunk_delay_ms", 5.0)),
            input_tokens=int(obj.get("input_tokens", 7)),
            output_tokens=int(obj.get("output_tokens", 8)),
            finish_reason=str(obj.get("finish_reason", "stop")),
        )
        if c.status not in (200, 429, 500):
            raise ValueError(f"call {c.id}: status {c.status}: want 200, 429 or 500")
        if c.finish_reason not in FINISH_REASONS:
            raise ValueError(f"call {c.id}: finish_reason {c.finish_reason!r}: want one of {FINISH_REASONS}")
        if c.ttft_ms < 0 or c.chunk_delay_ms < 0 or c.output_tokens < 0 or c.input_tokens < 0:
            raise ValueError(f"call {c.id}: negative delay or token count")
        return c


@dataclass
class Served:
    """What the server saw of one call: for the driver's log and checks."""

    id: str
    path: str
    model: str
    stream: bool
    include_usage: bool
    status: int
    received_ns: int
    first_chunk_ns: int | None = None
    done_ns: int = 0


def response_model(model: str) -> str:
    """The dated model name OpenAI answers for a requested alias."""
    return model + "-2024-07-18"


@dataclass
class FakeOpenAI:
    """The server's state: its calls by id and what it served."""

    calls: dict[str, Call] = field(default_factory=dict)
    served: list[Served] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, calls: Sequence[Mapping[str, Any]]) -> None:
        """Adds a scenario's calls; ids must be unique over the server."""
        with self.lock:
            for obj in calls:
                c = Call.from_json(obj)
                if c.id in self.calls:
                    raise ValueError(f"call id {c.id!r} given twice")
                self.calls[c.id] = c

    def lookup(self, call_id: str | None) -> Call | None:
        with self.lock:
            return self.calls.get(call_id or "")

    def record(self, s: Served) -> None:
        with self.lock:
            self.served.append(s)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass  # quiet: the driver reads Served records instead

    def _json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        received = time.time_ns()
        raw = read_body(self)
        try:
            req = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            self._json(400, {"error": {"message": f"body is not JSON: {e}", "type": "invalid_request_error"}})
            return
        path = self.path.split("?", 1)[0]
        if path not in ("/v1/chat/completions", "/v1/embeddings"):
            self._json(404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}})
            return
        call_id = self.headers.get(CALL_HEADER)
        call = self.server.fake.lookup(call_id)
        if call is None:
            self._json(400, {"error": {"message": f"header {CALL_HEADER}: unknown call {call_id!r}",
                                       "type": "invalid_request_error"}})
            return
        model = str(req.get("model", ""))
        stream = bool(req.get("stream", False))
        so = req.get("stream_options") or {}
        include_usage = bool(so.get("include_usage", False)) if isinstance(so, dict) else False
        served = Served(call.id, path, model, stream, include_usage, call.status, received)
        try:
            if call.status != 200:
                self._error(call)
            elif path == "/v1/embeddings":
                self._embeddings(call, model, req)
            elif stream:
                self._stream(call, model, include_usage, served)
            else:
                self._chat(call, model)
        finally:
            served.done_ns = time.time_ns()
            self.server.fake.record(served)

    def _error(self, call: Call) -> None:
        time.sleep(call.ttft_ms / 1000)
        if call.status == 429:
            self._json(429, {"error": {"message": "Rate limit reached (fake)", "type": "requests",
                                       "param": None, "code": "rate_limit_exceeded"}},
                       {"retry-after": "0"})
        else:
            self._json(500, {"error": {"message": "The server had an error (fake)", "type": "server_error",
                                       "param": None, "code": None}})

    def _usage(self, call: Call) -> dict[str, int]:
        return {"prompt_tokens": call.input_tokens, "completion_tokens": call.output_tokens,
                "total_tokens": call.input_tokens + call.output_tokens}

    def _chat(self, call: Call, model: str) -> None:
        time.sleep(call.ttft_ms / 1000)
        content = " ".join(f"t{i}" for i in range(call.output_tokens))
        self._json(200, {
            "id": "chatcmpl-" + call.id, "object": "chat.completion", "created": int(time.time()),
            "model": response_model(model), "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "logprobs": None, "finish_reason": call.finish_reason}],
            "usage": self._usage(call),
        })

    def _stream(self, call: Call, model: str, include_usage: bool, served: Served) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        base = {"id": "chatcmpl-" + call.id, "object": "chat.completion.chunk", "created": int(time.time()),
                "model": response_model(model), "system_fingerprint": "fp_fake"}

        def send(obj: Any) -> None:
            data = obj if isinstance(obj, str) else json.dumps(obj)
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        time.sleep(call.ttft_ms / 1000)
        for i in range(call.output_tokens):
            if i > 0:
                time.sleep(call.chunk_delay_ms / 1000)
            delta: dict[str, Any] = {"content": f"t{i} "}
            if i == 0:
                delta["role"] = "assistant"
                served.first_chunk_ns = time.time_ns()
            send({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}]})
        send({**base, "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": call.finish_reason}]})
        if include_usage:
            send({**base, "choices": [], "usage": self._usage(call)})
        send("[DONE]")

    def _embeddings(self, call: Call, model: str, req: Mapping[str, Any]) -> None:
        time.sleep(call.ttft_ms / 1000)
        vec = [0.25, -0.5, 0.125, 1.0]
        emb: Any = vec
        if req.get("encoding_format") == "base64":
            emb = base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
        inputs = req.get("input")
        n = len(inputs) if isinstance(inputs, list) and inputs and isinstance(inputs[0], str) else 1
        self._json(200, {
            "object": "list", "model": response_model(model),
            "data": [{"object": "embedding", "index": i, "embedding": emb} for i in range(n)],
            "usage": {"prompt_tokens": call.input_tokens, "total_tokens": call.input_tokens},
        })


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], fake: FakeOpenAI) -> None:
        super().__init__(addr, _Handler)
        self.fake = fake


class Running:
    """A fake server serving on a thread; stop() shuts it down."""

    def __init__(self, fake: FakeOpenAI, port: int = 0) -> None:
        self.fake = fake
        self.httpd = _Server(("127.0.0.1", port), fake)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print("usage: fakeopenai.py SCENARIO.json [PORT]", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        scenario = json.load(f)
    fake = FakeOpenAI()
    fake.add(scenario["calls"])
    r = Running(fake, int(argv[2]) if len(argv) == 3 else 0)
    print(f"listening on {r.base_url}", flush=True)
    try:
        r.thread.join()
    except KeyboardInterrupt:
        r.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
