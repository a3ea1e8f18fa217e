"""A local OpenAI-compatible server (stdlib only) for the litellm tests: chat
completions plain and streamed (SSE), and embeddings. Every deployment points
its api_base at /<name>/v1, so each answer says which deployment served it
and the server counts requests per deployment: the Router makes real HTTP
calls, and the tests measure where they went."""

from __future__ import annotations

import collections
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class OpenAIServer:
    def __init__(self) -> None:
        self.hits: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.failing: set[str] = set()  # deployments that answer 500 (an OpenAI-style server_error)
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def base(self, name: str) -> str:
        return f"http://127.0.0.1:{self.port}/{name}/v1"

    def take(self) -> collections.Counter[str]:
        """The requests per deployment since the last take."""
        with self.lock:
            out = collections.Counter(self.hits)
            self.hits.clear()
        return out

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(n) or b"{}")
                name = self.path.strip("/").split("/")[0]
                with srv.lock:
                    srv.hits[name] += 1
                model = body.get("model")
                if name in srv.failing:
                    b = json.dumps({"error": {"message": name + " is down", "type": "server_error"}}).encode()
                    self.send_response(500)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(b)))
                    self.end_headers()
                    self.wfile.write(b)
                    return
                if self.path.endswith("/embeddings"):
                    self._json({"object": "list", "model": model, "usage": {"prompt_tokens": 1, "total_tokens": 1},
                                "data": [{"object": "embedding", "index": 0, "embedding": [0.5, float(len(name))]}]})
                    return
                now = int(time.time())
                if self.path.endswith("/completions") and not self.path.endswith("/chat/completions"):
                    self._json({"id": "t1", "object": "text_completion", "created": now, "model": model,
                                "choices": [{"index": 0, "text": "from " + name, "finish_reason": "stop",
                                             "logprobs": None}],
                                "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
                    return
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("transfer-encoding", "chunked")
                    self.end_headers()
                    for delta, fin in (({"role": "assistant", "content": "from "}, None), ({"content": name}, None),
                                       ({}, "stop")):
                        ev = {"id": "c1", "object": "chat.completion.chunk", "created": now, "model": model,
                              "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]}
                        self._chunk(b"data: " + json.dumps(ev).encode() + b"\n\n")
                    self._chunk(b"data: [DONE]\n\n")
                    self._chunk(b"")
                    return
                self._json({"id": "c1", "object": "chat.completion", "created": now, "model": model,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": "from " + name}}],
                            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})

            def _chunk(self, b: bytes) -> None:
                self.wfile.write(f"{len(b):x}\r\n".encode() + b + b"\r\n")
                self.wfile.flush()

            def _json(self, obj: Any) -> None:
                b = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(b)))
                self.end_headers()
                self.wfile.write(b)

        return Handler
