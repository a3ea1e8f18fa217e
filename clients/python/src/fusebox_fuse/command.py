"""Fuse commands: the canonical JSON form (fusebox.fuse_command.v1).

The rules are Go's (fuse/fuseschema/codec.go, fuse/fuseschema/decode.go),
byte for byte; the shared vectors in fuse/testdata/vectors hold this module
to them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Final

SCHEMA: Final = "fusebox.fuse_command.v1"
"""The value of the "schema" member."""

MAX_COMMAND_BYTES: Final = 1 << 20
"""The longest record value decode accepts (1 MiB)."""

MAX_LEVEL: Final = 2
"""The highest level a command may carry (trip)."""

WILDCARD: Final = "*"
"""A target dimension equal to WILDCARD matches every value."""

FIELDS: Final = (
    "schema", "target", "action", "level", "state", "version",
    "issued_at_unix_nano", "expires_at_unix_nano", "fallback",
    "throttle_fraction", "reasons", "correlation_ids", "key_id", "signature",
)
"""The members of the canonical object, in their order."""

ACTIONS: Final = ("trip", "half_open", "close", "degrade", "throttle", "rollback", "scale_out")
STATES: Final = ("closed", "open", "half_open")
DIMENSIONS: Final = ("tenant", "service", "model", "variant")

_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT64_MAX: Final = (1 << 64) - 1
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1


class CommandError(ValueError):
    """A record value that is not a valid fuse command.

    ``kind`` is ``"malformed"`` (not JSON, wrong type, unknown, repeated or
    missing member), ``"invalid"`` (a rule of the contract broken) or
    ``"too_large"``; ``field`` names the member (``"fuse_command"`` for the
    whole value), as Go's schemas.FieldError does.
    """

    def __init__(self, kind: str, field: str, reason: str) -> None:
        super().__init__(f"{_KIND_TEXT[kind]}: {field}: {reason}")
        self.kind = kind
        self.field = field
        self.reason = reason


_KIND_TEXT: Final = {"malformed": "malformed record", "invalid": "invalid record", "too_large": "record exceeds limit"}


def _malformed(field: str, reason: str) -> CommandError:
    return CommandError("malformed", field, reason)


def _invalid(field: str, reason: str) -> CommandError:
    return CommandError("invalid", field, reason)


@dataclass(frozen=True, order=True)
class Key:
    """A request key or a command's target (tenant, service, model, variant)."""

    tenant: str = ""
    service: str = ""
    model: str = ""
    variant: str = ""

    def __str__(self) -> str:
        """The record key form "tenant/service/model/variant" (Go's Key.String)."""
        return "/".join(_escape_dim(d) for d in (self.tenant, self.service, self.model, self.variant))


def _escape_dim(s: str) -> str:
    out = bytearray()
    for b in s.encode("utf-8", "surrogatepass"):
        if b == 0x25 or b == 0x2F or b < 0x21 or b == 0x7F:
            out += b"%%%02X" % b
        else:
            out.append(b)
    return out.decode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class Reason:
    """A verdict that caused the command."""

    verdict_id: str
    text: str = ""


@dataclass(frozen=True)
class FuseCommand:
    """What fusebox tells gateways about one target (schemas.FuseCommand)."""

    target: Key
    action: str
    level: int
    state: str
    version: int
    issued_at_unix_nano: int
    expires_at_unix_nano: int
    fallback: str = ""
    throttle_fraction: float = 0.0
    reasons: tuple[Reason, ...] = ()
    correlation_ids: tuple[str, ...] = ()
    key_id: str = ""
    signature: str = ""

    def validate(self) -> None:
        """Checks the rules of the contract that are not about bytes.

        Raises CommandError (kind "invalid") naming the field, in Go's order.
        """
        if self.action not in ACTIONS:
            raise _invalid("action", "unknown action " + go_quote(self.action))
        if self.state not in STATES:
            raise _invalid("state", "unknown state " + go_quote(self.state))
        if not (0 <= self.level <= MAX_LEVEL):
            raise _invalid("level", f"must be in [0, {MAX_LEVEL}], got {self.level}")
        if self.version == 0:
            raise _invalid("version", "must be at least 1")
        if not (0 <= self.version <= _UINT64_MAX):
            raise _invalid("version", "must be an unsigned 64-bit integer")
        for name, v in (("issued_at_unix_nano", self.issued_at_unix_nano), ("expires_at_unix_nano", self.expires_at_unix_nano)):
            if not (_INT64_MIN <= v <= _INT64_MAX):
                raise _invalid(name, "must be a signed 64-bit integer")
        if self.expires_at_unix_nano <= self.issued_at_unix_nano:
            raise _invalid("expires_at_unix_nano", "must be after issued_at_unix_nano")
        f = self.throttle_fraction
        if math.isnan(f) or f < 0 or f > 1:
            raise _invalid("throttle_fraction", "must be a number in [0, 1]")
        if self.action == "degrade" and self.fallback == "":
            raise _invalid("fallback", "required when action is degrade")
        if len(self.reasons) == 0:
            raise _invalid("reasons", "at least one reason is required")
        for name, s in (("target.tenant", self.target.tenant), ("target.service", self.target.service),
                        ("target.model", self.target.model), ("target.variant", self.target.variant),
                        ("fallback", self.fallback)):
            if not _valid_utf8(s):
                raise _invalid(name, "not valid UTF-8")
        for i, r in enumerate(self.reasons):
            if r.verdict_id == "":
                raise _invalid(f"reasons[{i}].verdict_id", "must not be empty")
            if not _valid_utf8(r.verdict_id):
                raise _invalid(f"reasons[{i}].verdict_id", "not valid UTF-8")
            if not _valid_utf8(r.text):
                raise _invalid(f"reasons[{i}].text", "not valid UTF-8")
        for i, cid in enumerate(self.correlation_ids):
            if not _valid_utf8(cid):
                raise _invalid(f"correlation_ids[{i}]", "not valid UTF-8")
        if not valid_key_id(self.key_id):
            raise _invalid("key_id", "must be at most 64 characters from [A-Za-z0-9._-]")
        if self.signature != "":
            if self.key_id == "":
                raise _invalid("signature", "a signature needs a key_id")
            if not _LOWER_HEX64.fullmatch(self.signature):
                raise _invalid("signature", "must be 64 lower-case hex digits (HMAC-SHA256)")

    def canonical_bytes(self) -> bytes:
        """The bytes a signature covers: the canonical object without its
        "signature" member (key_id included). Raises CommandError when
        validate does."""
        self.validate()
        return self._canonical() + b"}"

    def encode(self) -> bytes:
        """The canonical record value, signature included."""
        self.validate()
        return self._canonical() + b',"signature":' + _string(self.signature) + b"}"

    def _canonical(self) -> bytes:
        t = self.target
        parts = [
            b'{"schema":"', SCHEMA.encode(), b'","target":{"tenant":', _string(t.tenant),
            b',"service":', _string(t.service), b',"model":', _string(t.model),
            b',"variant":', _string(t.variant), b'},"action":', _string(self.action),
            b',"level":', str(self.level).encode(), b',"state":', _string(self.state),
            b',"version":', str(self.version).encode(),
            b',"issued_at_unix_nano":', str(self.issued_at_unix_nano).encode(),
            b',"expires_at_unix_nano":', str(self.expires_at_unix_nano).encode(),
            b',"fallback":', _string(self.fallback),
            b',"throttle_fraction":', format_float(self.throttle_fraction).encode(),
            b',"reasons":[',
            b",".join(b'{"verdict_id":' + _string(r.verdict_id) + b',"text":' + _string(r.text) + b"}" for r in self.reasons),
            b'],"correlation_ids":[', b",".join(_string(c) for c in self.correlation_ids),
            b'],"key_id":', _string(self.key_id),
        ]
        return b"".join(parts)

    def unsigned(self) -> FuseCommand:
        """The command with key_id and signature cleared."""
        return replace(self, key_id="", signature="")


def compare_order(a: FuseCommand | None, b: FuseCommand | None) -> int:
    """The fuse ordering contract (schemas.CompareFuseOrder): by issued-at,
    then version; -1, 0 or +1. None counts as the zero command."""
    ai, av = (a.issued_at_unix_nano, a.version) if a is not None else (0, 0)
    bi, bv = (b.issued_at_unix_nano, b.version) if b is not None else (0, 0)
    if ai != bi:
        return -1 if ai < bi else 1
    if av != bv:
        return -1 if av < bv else 1
    return 0


_LOWER_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_KEY_ID: Final = re.compile(r"[A-Za-z0-9._-]{0,64}")


def valid_key_id(s: str) -> bool:
    """At most 64 characters from [A-Za-z0-9._-] ("" allowed: unsigned)."""
    return _KEY_ID.fullmatch(s) is not None


def _valid_utf8(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_ESCAPES: Final = {
    '"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}
_NEEDS_ESCAPE: Final = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029]')


def _escape_char(m: re.Match[str]) -> str:
    ch = m.group(0)
    esc = _ESCAPES.get(ch)
    return esc if esc is not None else "\\u%04x" % ord(ch)


def _string(s: str) -> bytes:
    """s quoted and escaped as Go's encoding/json does with HTML escaping on."""
    return ('"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"').encode("utf-8")


def format_float(f: float) -> str:
    """f as Go's encoding/json writes a float64 (the ECMAScript rule):
    the shortest decimal that reads back as f, in fixed notation unless
    |f| < 1e-6 or |f| >= 1e21 (then exponent form, e.g. 1e-7); 0 and -0
    are "0". f must be finite."""
    if not math.isfinite(f):
        raise ValueError("not finite")
    if f == 0:
        return "0"
    sign = "-" if f < 0 else ""
    r = repr(abs(f))  # Python's repr is the shortest round-trip decimal too
    mant, _, exp_s = r.partition("e")
    exp = int(exp_s) if exp_s else 0
    ip, _, fp = mant.partition(".")
    digits = (ip + fp).lstrip("0")
    exp10 = exp - len(fp)
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exp10  # value = 0.digits * 10**point
    a = abs(f)
    if a < 1e-6 or a >= 1e21:
        e = point - 1
        body = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{body}e{'-' if e < 0 else '+'}{abs(e)}"
    if point <= 0:
        return f"{sign}0.{'0' * -point}{digits}"
    if point >= len(digits):
        return sign + digits + "0" * (point - len(digits))
    return f"{sign}{digits[:point]}.{digits[point:]}"


class _Num(str):
    """A JSON number's literal text, kept for Go's integer/float rules."""


def _num(s: str) -> _Num:
    return _Num(s)


def _reject_constant(s: str) -> Any:
    raise _malformed("fuse_command", "bad JSON: invalid character " + go_quote(s[0]) + " looking for beginning of value")


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _go_string(v: Any, field: str) -> str:
    if not isinstance(v, str) or isinstance(v, _Num):
        raise _malformed(field, "want a string, got " + _kind(v))
    # Go's decoder turns an escaped lone surrogate into U+FFFD.
    return _SURROGATE.sub("\ufffd", v)


def _kind(v: Any) -> str:
    if isinstance(v, _Num):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, bool):
        return "a boolean"
    if v is None:
        return "null"
    if isinstance(v, _Obj):
        return '"{"'
    if isinstance(v, list):
        return '"["'
    return "something else"


class _Obj(list[tuple[str, Any]]):
    """A JSON object as its members in order (repeats kept)."""


def _number(v: Any, field: str) -> _Num:
    if not isinstance(v, _Num):
        raise _malformed(field, "want a number, got " + _kind(v))
    return v


def _int(v: Any, field: str, bits: int) -> int:
    lit = _number(v, field)
    lo, hi = (_INT32_MIN, _INT32_MAX) if bits == 32 else (_INT64_MIN, _INT64_MAX)
    if not re.fullmatch(r"-?[0-9]+", lit) or not (lo <= int(lit) <= hi):
        raise _malformed(field, f"not a {bits}-bit integer: {lit}")
    return int(lit)


def _object(v: Any, field: str) -> _Obj:
    if not isinstance(v, _Obj):
        raise _malformed(field, "want an object, got " + _kind(v))
    return v


def _array(v: Any, field: str) -> list[Any]:
    if not isinstance(v, list) or isinstance(v, _Obj):
        raise _malformed(field, "want an array, got " + _kind(v))
    return v


def decode(value: bytes) -> FuseCommand:
    """Parses and validates a record value (schemas.DecodeFuseCommand).

    Strict: exactly the canonical members at every level (none unknown,
    repeated or missing; names case-sensitive), "schema" equal to SCHEMA,
    nothing after the object, 64-bit integers kept exact; member order and
    spacing are free (a signature is checked over the canonical
    re-encoding). Raises CommandError with Go's kind and field. Where a value
    is broken in several ways, a syntax error is reported before a member's
    error (Go, reading token by token, may report the member first).
    """
    if len(value) > MAX_COMMAND_BYTES:
        raise CommandError("too_large", "fuse_command", f"{len(value)} exceeds the limit of {MAX_COMMAND_BYTES}")
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        raise _malformed("fuse_command", "not valid UTF-8") from None
    dec = json.JSONDecoder(object_pairs_hook=_Obj, parse_int=_num, parse_float=_num, parse_constant=_reject_constant)
    start = len(text) - len(text.lstrip(" \t\n\r"))
    try:
        doc, end = dec.raw_decode(text, start)
    except CommandError:
        raise
    except (ValueError, RecursionError) as e:
        raise _malformed("fuse_command", "bad JSON: " + str(e)) from None
    top = _object(doc, "fuse_command")
    seen: set[str] = set()
    vals: dict[str, Any] = {}
    members: dict[str, Callable[[Any, str], Any]] = {
        "schema": _schema, "target": _target, "action": _go_string, "level": lambda v, f: _int(v, f, 32),
        "state": _go_string, "version": _version, "issued_at_unix_nano": lambda v, f: _int(v, f, 64),
        "expires_at_unix_nano": lambda v, f: _int(v, f, 64), "fallback": _go_string,
        "throttle_fraction": _fraction, "reasons": _reasons, "correlation_ids": _correlation_ids,
        "key_id": _go_string, "signature": _go_string,
    }
    for name, v in top:
        if name in seen:
            raise _malformed(name, "member repeated")
        seen.add(name)
        fn = members.get(name)
        if fn is None:
            raise _malformed(name, "unknown member")
        vals[name] = fn(v, name)
    if text[end:].strip(" \t\n\r"):
        raise _malformed("fuse_command", "data after the object")
    for f in FIELDS:
        if f not in seen:
            raise _malformed(f, "member missing")
    c = FuseCommand(
        target=vals["target"], action=vals["action"], level=vals["level"], state=vals["state"],
        version=vals["version"], issued_at_unix_nano=vals["issued_at_unix_nano"],
        expires_at_unix_nano=vals["expires_at_unix_nano"], fallback=vals["fallback"],
        throttle_fraction=vals["throttle_fraction"], reasons=vals["reasons"],
        correlation_ids=vals["correlation_ids"], key_id=vals["key_id"], signature=vals["signature"],
    )
    c.validate()
    return c


def _schema(v: Any, f: str) -> str:
    s = _go_string(v, f)
    if s != SCHEMA:
        raise _invalid(f, "must be " + go_quote(SCHEMA) + ", got " + go_quote(s))
    return s


def _version(v: Any, f: str) -> int:
    lit = _number(v, f)
    if not re.fullmatch(r"[0-9]+", lit) or int(lit) > _UINT64_MAX:
        raise _malformed(f, "not an unsigned 64-bit integer: " + lit)
    return int(lit)


def _fraction(v: Any, f: str) -> float:
    lit = _number(v, f)
    x = float(lit)
    if math.isinf(x):  # Go's ParseFloat: out of range
        raise _malformed(f, "not a float64: " + lit)
    return x


def _target(v: Any, f: str) -> Key:
    obj = _object(v, "target")
    dims: dict[str, str] = {}
    for name, x in obj:
        fld = "target." + name
        if name in dims:
            raise _malformed(fld, "member repeated")
        if name not in DIMENSIONS:
            raise _malformed(fld, "unknown member")
        dims[name] = _go_string(x, fld)
    for d in DIMENSIONS:
        if d not in dims:
            raise _malformed("target." + d, "member missing")
    return Key(dims["tenant"], dims["service"], dims["model"], dims["variant"])


def _reasons(v: Any, f: str) -> tuple[Reason, ...]:
    out = []
    for i, x in enumerate(_array(v, f)):
        path = f"reasons[{i}]"
        obj = _object(x, path)
        m: dict[str, str] = {}
        for name, y in obj:
            fld = path + "." + name
            if name in m:
                raise _malformed(fld, "member repeated")
            if name not in ("verdict_id", "text"):
                raise _malformed(fld, "unknown member")
            m[name] = _go_string(y, fld)
        for need in ("verdict_id", "text"):
            if need not in m:
                raise _malformed(path + "." + need, "member missing")
        out.append(Reason(m["verdict_id"], m["text"]))
    return tuple(out)


def _correlation_ids(v: Any, f: str) -> tuple[str, ...]:
    return tuple(_go_string(x, f"correlation_ids[{i}]") for i, x in enumerate(_array(v, f)))


def go_quote(s: str) -> str:
    """Go's strconv.Quote for the printable strings error messages hold."""
    out = ['"']
    for ch in s:
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append("\\x%02x" % ord(ch))
        elif not ch.isprintable() and ord(ch) > 0x7F:
            out.append("\\u%04x" % ord(ch) if ord(ch) <= 0xFFFF else "\\U%08x" % ord(ch))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def from_fields(d: dict[str, Any]) -> FuseCommand:
    """A FuseCommand from a dict of canonical member names (no validation;
    "NaN", "+Inf" and "-Inf" strings are the non-finite fractions)."""
    t = d.get("target", {})
    frac = d.get("throttle_fraction", 0.0)
    if isinstance(frac, str):
        frac = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf}[frac]
    return FuseCommand(
        target=Key(t.get("tenant", ""), t.get("service", ""), t.get("model", ""), t.get("variant", "")),
        action=d.get("action", ""), level=int(d.get("level", 0)), state=d.get("state", ""),
        version=int(d.get("version", 0)), issued_at_unix_nano=int(d.get("issued_at_unix_nano", 0)),
        expires_at_unix_nano=int(d.get("expires_at_unix_nano", 0)), fallback=d.get("fallback", ""),
        throttle_fraction=float(frac),
        reasons=tuple(Reason(r["verdict_id"], r.get("text", "")) for r in d.get("reasons", [])),
        correlation_ids=tuple(d.get("correlation_ids", [])), key_id=d.get("key_id", ""),
        signature=d.get("signature", ""),
    )


__all__ = [
    "ACTIONS", "DIMENSIONS", "FIELDS", "MAX_COMMAND_BYTES", "MAX_LEVEL", "SCHEMA", "STATES", "WILDCARD",
    "CommandError", "FuseCommand", "Key", "Reason", "compare_order", "decode", "format_float",
    "from_fields", "go_quote", "valid_key_id",
]
