"""The request body of an HTTP/1.1 request, as the suite's servers (the fake
OpenAI server, the OTLP receiver) read it."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler


def read_body(h: BaseHTTPRequestHandler) -> bytes:
    """The request body, by Content-Length or chunked (Node's fetch sends
    bodies chunked)."""
    if "chunked" in (h.headers.get("Transfer-Encoding") or "").lower():
        out = bytearray()
        while True:
            size = int(h.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while h.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return bytes(out)
            out += h.rfile.read(size)
            h.rfile.readline()
    n = int(h.headers.get("Content-Length") or 0)
    return h.rfile.read(n) if n else b""
