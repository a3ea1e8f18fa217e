"""HMAC-SHA256 keys: the key-file format, signing and verifying (fuse/keyring.go, fuse/sign.go)."""

from __future__ import annotations

import base64
import binascii
import calendar
import hashlib
import hmac
import os
import re
import time
from dataclasses import dataclass, field, replace
from typing import Final

from .command import FuseCommand, go_quote

ENV_KEYS: Final = "FUSEBOX_FUSE_KEYS"
"""The environment variable keyring_from_env reads."""

MIN_SECRET_BYTES: Final = 32
"""The shortest secret accepted (SHA-256's output size)."""


class FuseError(Exception):
    """Base of the package's errors."""


class NoKeysError(FuseError):
    """A keyring source held no key."""

    def __init__(self, msg: str = "fuse: no keys") -> None:
        super().__init__(msg)


class VerifyError(FuseError):
    """A command that did not verify; ``reason`` is the client's
    rejection reason (unsigned, unknown_key, key_retired, bad_signature)."""

    reason: str = ""


class UnsignedError(VerifyError):
    reason = "unsigned"


class UnknownKeyError(VerifyError):
    reason = "unknown_key"


class KeyRetiredError(VerifyError):
    reason = "key_retired"


class BadSignatureError(VerifyError):
    reason = "bad_signature"


class KeyringError(FuseError):
    """Which key entry is wrong (never the secret): Go's *fuse.KeyError."""

    def __init__(self, reason: str, *, source: str = "", entry: int = 0, key_id: str = "") -> None:
        self.reason, self.source, self.entry, self.key_id = reason, source, entry, key_id
        super().__init__(str(self))

    def __str__(self) -> str:
        s = "fuse: keys"
        if self.source:
            s += " " + go_quote(self.source)
        if self.entry > 0:
            s += f" entry {self.entry}"
        if self.key_id:
            s += " (key id " + go_quote(self.key_id) + ")"
        return s + ": " + self.reason


_ID: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")
_ID_REASON: Final = "key id must be 1 to 64 characters from [A-Za-z0-9._-]"


@dataclass(frozen=True)
class Key:
    """One HMAC-SHA256 key. repr and str show the id, never the secret."""

    id: str
    secret: bytes = field(repr=False)
    # not_after_unix_nano: verifiers stop accepting the key after it
    # (None: never).
    not_after_unix_nano: int | None = None

    def __post_init__(self) -> None:
        if not _ID.fullmatch(self.id):
            raise KeyringError(_ID_REASON, key_id=self.id)
        if len(self.secret) < MIN_SECRET_BYTES:
            raise KeyringError(f"secret shorter than {MIN_SECRET_BYTES} bytes ({len(self.secret)})", key_id=self.id)

    def __str__(self) -> str:
        s = "fuse.Key(" + self.id
        if self.not_after_unix_nano is not None:
            s += ", not-after " + format_rfc3339(self.not_after_unix_nano)
        return s + ", secret redacted)"


class Keyring:
    """The keys a signer signs with (the active one) and a verifier accepts.
    Immutable; rotate by building a new one."""

    def __init__(self, keys: list[Key], active: str = "") -> None:
        if not keys:
            raise NoKeysError()
        self._keys: dict[str, Key] = {}
        for k in keys:
            if k.id in self._keys:
                raise KeyringError("key id listed twice", key_id=k.id)
            self._keys[k.id] = k
        self.ids: tuple[str, ...] = tuple(k.id for k in keys)
        if active == "":
            active = keys[-1].id
        if active not in self._keys:
            raise KeyringError("the active key is not in the keyring", key_id=active)
        self.active = active

    def key(self, key_id: str) -> Key | None:
        return self._keys.get(key_id)

    def __repr__(self) -> str:
        return "fuse.Keyring(" + ",".join(self.ids) + "; active " + self.active + ")"

    __str__ = __repr__

    def sign(self, c: FuseCommand) -> FuseCommand:
        """c signed with the active key (key_id and signature set).

        Raises KeyRetiredError when the key's not-after is before c's
        issued-at, CommandError when c is not valid."""
        k = self._keys[self.active]
        if k.not_after_unix_nano is not None and c.issued_at_unix_nano > k.not_after_unix_nano:
            raise KeyRetiredError(f"fuse: key retired: active key {go_quote(k.id)} not-after "
                                  f"{format_rfc3339(k.not_after_unix_nano)} is before the command's issued-at")
        c = replace(c, key_id=k.id, signature="")
        return replace(c, signature=_mac(k.secret, c))

    def verify(self, c: FuseCommand, now_unix_nano: int | None = None) -> None:
        """Checks c's signature with the key its key_id names, at now (for
        the key's not-after; default the wall clock). Raises a VerifyError;
        the comparison is constant-time."""
        now = time.time_ns() if now_unix_nano is None else now_unix_nano
        if c.key_id == "" or c.signature == "":
            raise UnsignedError("fuse: command is unsigned")
        k = self._keys.get(c.key_id)
        if k is None:
            raise UnknownKeyError("fuse: unknown key id " + go_quote(c.key_id))
        if k.not_after_unix_nano is not None and now > k.not_after_unix_nano:
            raise KeyRetiredError(f"fuse: key retired: key {go_quote(k.id)} not-after {format_rfc3339(k.not_after_unix_nano)}")
        want = _mac(k.secret, c)
        if not hmac.compare_digest(want.encode(), c.signature.encode()):
            raise BadSignatureError(f"fuse: bad signature (key {go_quote(k.id)})")


def _mac(secret: bytes, c: FuseCommand) -> str:
    return hmac.new(secret, c.canonical_bytes(), hashlib.sha256).hexdigest()


def format_rfc3339(ns: int) -> str:
    """Go's t.UTC().Format(time.RFC3339): seconds, "Z"."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ns // 1_000_000_000))


_RFC3339: Final = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|([+-])(\d{2}):(\d{2}))")


def parse_rfc3339(s: str) -> int | None:
    """Unix ns of an RFC 3339 time (as Go's time.Parse(time.RFC3339)), or None."""
    m = _RFC3339.fullmatch(s)
    if m is None:
        return None
    y, mo, d, h, mi, se = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= mo <= 12 and 1 <= d <= calendar.monthrange(y, mo)[1] and h < 24 and mi < 60 and se < 60):
        return None
    secs = calendar.timegm((y, mo, d, h, mi, se, 0, 0, 0))
    if m.group(8) != "Z":
        oh, om = int(m.group(10)), int(m.group(11))
        if oh > 23 or om > 59:
            return None
        off = (oh * 60 + om) * 60
        secs -= off if m.group(9) == "+" else -off
    frac = m.group(7) or ""
    return secs * 1_000_000_000 + int((frac + "000000000")[:9])


def parse_keyring(text: str, source: str = "") -> Keyring:
    """Keys in the key-file format (fuse.ParseKeyring):

        # comment to the end of the line
        id:secret [not-after=RFC3339] [active]

    entries separated by newlines or commas; the secret hex ("hex:" prefix
    optional) or "base64:"-prefixed base64 (standard or URL alphabet, padded
    or not); at least 32 bytes. The key marked active signs, else the last.
    Raises KeyringError (Go's messages) or NoKeysError."""
    keys: list[Key] = []
    active = ""
    entry = 0
    for line in text.split("\n"):
        line = line.split("#", 1)[0]
        for e in line.split(","):
            e = e.strip()
            if not e:
                continue
            entry += 1
            try:
                k, is_active = _parse_entry(e)
            except KeyringError as err:
                err.source, err.entry = source, entry
                err.args = (str(err),)
                raise
            if is_active:
                if active:
                    raise KeyringError(f"more than one key marked active ({active})", source=source, entry=entry, key_id=k.id)
                active = k.id
            keys.append(k)
    if not keys:
        raise NoKeysError("fuse: no keys in " + source if source else "fuse: no keys")
    try:
        return Keyring(keys, active)
    except KeyringError as err:
        err.source = source
        err.args = (str(err),)
        raise


def load_keyring_file(path: str) -> Keyring:
    with open(path, encoding="utf-8") as f:
        return parse_keyring(f.read(), path)


def keyring_from_env() -> Keyring:
    """The keys in FUSEBOX_FUSE_KEYS; NoKeysError when unset or empty."""
    v = os.environ.get(ENV_KEYS, "")
    if not v.strip():
        raise NoKeysError()
    return parse_keyring(v, ENV_KEYS)


def _parse_entry(e: str) -> tuple[Key, bool]:
    fields = e.split()
    kid, sep, secret = fields[0].partition(":")
    if not sep or kid == "":
        raise KeyringError("want id:secret")
    if not _ID.fullmatch(kid):
        raise KeyringError(_ID_REASON, key_id=kid)
    raw = _decode_secret(secret, kid)
    not_after: int | None = None
    is_active = False
    for f in fields[1:]:
        if f == "active":
            is_active = True
        elif f.startswith("not-after="):
            v = f[len("not-after="):]
            not_after = parse_rfc3339(v)
            if not_after is None:
                raise KeyringError("not-after is not an RFC 3339 time: " + go_quote(v), key_id=kid)
        else:
            raise KeyringError("unknown attribute " + go_quote(f) + " (want not-after=RFC3339 or active)", key_id=kid)
    return Key(kid, raw, not_after), is_active


_HEX: Final = re.compile(r"(?:[0-9a-fA-F]{2})*")


def _decode_secret(s: str, kid: str) -> bytes:
    if s.startswith("hex:"):
        h = s[4:]
        if not _HEX.fullmatch(h):
            raise KeyringError("secret is not valid hex", key_id=kid)
        return bytes.fromhex(h)
    if s.startswith("base64:"):
        b = _decode_base64(s[7:])
        if b is None:
            raise KeyringError("secret is not valid base64", key_id=kid)
        return b
    if s == "":
        raise KeyringError("secret is empty", key_id=kid)
    if not _HEX.fullmatch(s):
        raise KeyringError("secret is not hex (" + _hex_problem(s) + "); write a base64 secret as base64:SECRET", key_id=kid)
    return bytes.fromhex(s)


def _hex_problem(s: str) -> str:
    for i, c in enumerate(s.encode("utf-8")):
        if not (48 <= c <= 57 or 97 <= c <= 102 or 65 <= c <= 70):
            return f"character {i + 1} is not a hex digit"
    return "odd number of hex digits"


def _decode_base64(s: str) -> bytes | None:
    std = re.fullmatch(r"[A-Za-z0-9+/]*={0,2}", s)
    url = re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", s)
    for ok, alt in ((std, b"+/"), (url, b"-_")):
        if ok is None:
            continue
        body = s.rstrip("=")
        pad = len(s) - len(body)
        if pad and len(s) % 4 != 0:
            continue
        if len(body) % 4 == 1:
            continue
        try:
            b = base64.b64decode(body + "=" * (-len(body) % 4), altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            continue
        return b
    return None


__all__ = [
    "ENV_KEYS", "MIN_SECRET_BYTES", "BadSignatureError", "FuseError", "Key", "KeyRetiredError", "Keyring",
    "KeyringError", "NoKeysError", "UnknownKeyError", "UnsignedError", "VerifyError", "format_rfc3339",
    "keyring_from_env", "load_keyring_file", "parse_keyring", "parse_rfc3339",
]
