"""A minimal reader of OTLP TracesData protobuf (the bytes the receiver
writes to Kafka), so the driver can say what a library itself wrote —
which attributes and span events — independently of fusebox's decoder:
a field fusebox does not show is "not emitted" only if the raw span lacks
every form of it. Reads only what the driver needs: resource and span
attributes (string, bool, int, double; arrays as lists), the scope name,
span name, times, status code and span events (name, time, attributes).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any

Value = Any  # str | bool | int | float | list[Value] | None


def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7


def _fields(b: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value: int for varint/fixed, bytes for len)."""
    out: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
            out.append((num, wt, v))
        elif wt == 1:
            out.append((num, wt, b[i:i + 8]))
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            out.append((num, wt, b[i:i + n]))
            i += n
        elif wt == 5:
            out.append((num, wt, b[i:i + 4]))
            i += 4
        else:
            raise ValueError(f"wire type {wt} at byte {i}")
    return out


def _anyvalue(b: bytes) -> Value:
    for num, wt, v in _fields(b):
        if num == 1:
            return bytes(v).decode("utf-8", "replace")
        if num == 2:
            return bool(v)
        if num == 3:
            return v - (1 << 64) if v >= 1 << 63 else v
        if num == 4:
            return struct.unpack("<d", v)[0]
        if num == 5:  # ArrayValue
            return [_anyvalue(x) for n, _, x in _fields(v) if n == 1]
        if num == 7:
            return bytes(v)
    return None


def _attrs(kvs: list[bytes]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for kv in kvs:
        key, val = "", None
        for num, _, v in _fields(kv):
            if num == 1:
                key = bytes(v).decode("utf-8", "replace")
            elif num == 2:
                val = _anyvalue(v)
        out.setdefault(key, val)
    return out


@dataclass
class Event:
    name: str
    time_unix_nano: int
    attributes: dict[str, Value]


@dataclass
class RawSpan:
    scope: str
    name: str
    start_unix_nano: int
    end_unix_nano: int
    status_code: int  # 0 unset, 1 ok, 2 error
    resource: dict[str, Value]
    attributes: dict[str, Value]
    events: list[Event] = field(default_factory=list)


def _fixed64(v: bytes) -> int:
    return int(struct.unpack("<Q", v)[0])


def _span(b: bytes, scope: str, resource: dict[str, Value]) -> RawSpan:
    sp = RawSpan(scope, "", 0, 0, 0, resource, {})
    kvs: list[bytes] = []
    for num, _, v in _fields(b):
        if num == 5:
            sp.name = bytes(v).decode("utf-8", "replace")
        elif num == 7:
            sp.start_unix_nano = _fixed64(v)
        elif num == 8:
            sp.end_unix_nano = _fixed64(v)
        elif num == 9:
            kvs.append(v)
        elif num == 11:
            ev = Event("", 0, {})
            ekvs: list[bytes] = []
            for en, _, ev_v in _fields(v):
                if en == 1:
                    ev.time_unix_nano = _fixed64(ev_v)
                elif en == 2:
                    ev.name = bytes(ev_v).decode("utf-8", "replace")
                elif en == 3:
                    ekvs.append(ev_v)
            ev.attributes = _attrs(ekvs)
            sp.events.append(ev)
        elif num == 15:
            for sn, _, sv in _fields(v):
                if sn == 3:
                    sp.status_code = int(sv)
    sp.attributes = _attrs(kvs)
    return sp


def decode(b: bytes) -> list[RawSpan]:
    """Every span of a TracesData message."""
    out: list[RawSpan] = []
    for num, _, rs in _fields(b):
        if num != 1:
            continue
        resource: dict[str, Value] = {}
        scopes: list[bytes] = []
        for n, _, v in _fields(rs):
            if n == 1:
                resource = _attrs([x for k, _, x in _fields(v) if k == 1])
            elif n == 2:
                scopes.append(v)
        for ss in scopes:
            scope = ""
            spans: list[bytes] = []
            for n, _, v in _fields(ss):
                if n == 1:
                    scope = next((bytes(x).decode() for k, _, x in _fields(v) if k == 1), "")
                elif n == 2:
                    spans.append(v)
            out.extend(_span(s, scope, resource) for s in spans)
    return out
