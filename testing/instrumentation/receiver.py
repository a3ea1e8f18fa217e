"""The OTLP/HTTP receiver of the conformance suite: what the OpenTelemetry
Collector's otlp receiver and kafka exporter (encoding otlp_proto) do
together. POST /v1/traces with a protobuf ExportTraceServiceRequest (the
same bytes as a TracesData) is decompressed when Content-Encoding is gzip
and handed, otherwise unchanged, to a sink (the driver's: a Kafka producer
to otlp_spans), and answered 200 with an empty ExportTraceServiceResponse
once the sink returned. /v1/metrics and /v1/logs are answered 200 and
dropped (some libraries export metrics too). JSON bodies are refused with
415: the apps export protobuf, and the suite checks what fusebox reads of
the SDKs' default wire format. Standard library only.
"""

from __future__ import annotations

import gzip
import threading
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from httpbody import read_body

Sink = Callable[[bytes], None]


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        pass

    def _answer(self, status: int, body: bytes = b"", ctype: str = "application/x-protobuf") -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = read_body(self)
        path = self.path.split("?", 1)[0]
        if path in ("/v1/metrics", "/v1/logs"):
            self.server.dropped[path] = self.server.dropped.get(path, 0) + 1
            self._answer(200)
            return
        if path != "/v1/traces":
            self._answer(404, f"no route {path}".encode(), "text/plain")
            return
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        if ctype != "application/x-protobuf":
            self._answer(415, f"content type {ctype!r}: want application/x-protobuf".encode(), "text/plain")
            return
        enc = (self.headers.get("Content-Encoding") or "").strip().lower()
        try:
            if enc == "gzip":
                body = gzip.decompress(body)
            elif enc == "deflate":
                body = zlib.decompress(body)
            elif enc not in ("", "identity"):
                self._answer(415, f"content encoding {enc!r}".encode(), "text/plain")
                return
        except (OSError, zlib.error) as e:
            self._answer(400, f"bad {enc} body: {e}".encode(), "text/plain")
            return
        try:
            self.server.sink(body)
        except Exception as e:  # the exporter retries on 503, as it would with a Collector
            self.server.errors.append(repr(e))
            self._answer(503, repr(e).encode(), "text/plain")
            return
        with self.server.lock:
            self.server.requests += 1
        self._answer(200)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sink: Sink) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.sink = sink
        self.lock = threading.Lock()
        self.requests = 0
        self.errors: list[str] = []
        self.dropped: dict[str, int] = {}


class Receiver:
    """A receiver serving on a thread, on a free loopback port."""

    def __init__(self, sink: Sink) -> None:
        self.httpd = _Server(sink)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def traces_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1/traces"

    @property
    def requests(self) -> int:
        with self.httpd.lock:
            return self.httpd.requests

    @property
    def errors(self) -> list[str]:
        return list(self.httpd.errors)

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
