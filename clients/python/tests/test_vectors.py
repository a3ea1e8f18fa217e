"""The shared vectors (fuse/testdata/vectors, written by the Go package): the
Python client must give exactly what they say, byte for byte."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from fusebox_fuse import Client, CommandError, Key, Keyring, KeyringError, NoKeysError, VerifyError, decode, parse_keyring
from fusebox_fuse.command import MAX_COMMAND_BYTES, format_float, from_fields

VECTORS = Path(__file__).resolve().parents[3] / "fuse" / "testdata" / "vectors"


def load(name: str) -> Any:
    path = VECTORS / name
    assert path.is_file(), f"missing shared vector file {path}"
    return json.loads(path.read_text(encoding="utf-8"))


KEYRINGS = load("keyrings.json")
CODEC = load("codec.json")
VERIFY = load("verify.json")
CLIENT = load("client.json")


def rings() -> dict[str, Keyring]:
    return {r["name"]: parse_keyring(r["text"]) for r in KEYRINGS["keyrings"]}


def test_vector_files_are_not_empty() -> None:
    assert len(KEYRINGS["keyrings"]) >= 4 and len(KEYRINGS["parse_errors"]) >= 10
    assert len(CODEC["commands"]) >= 20 and len(CODEC["decode_errors"]) >= 30 and CODEC["encode_errors"]
    assert len(VERIFY["cases"]) >= 10
    assert len(CLIENT["sequences"]) >= 5


@pytest.mark.parametrize("ring", KEYRINGS["keyrings"], ids=lambda r: r["name"])
def test_keyring_parses_as_go(ring: dict[str, Any]) -> None:
    kr = parse_keyring(ring["text"])
    assert kr.active == ring["active"]
    assert list(kr.ids) == [k["id"] for k in ring["keys"]]
    for want in ring["keys"]:
        k = kr.key(want["id"])
        assert k is not None
        assert k.secret.hex() == want["secret_hex"]
        assert k.not_after_unix_nano == (want["not_after_unix_nano"] or None)
        assert want["secret_hex"] not in repr(k) and want["secret_hex"] not in str(kr)


@pytest.mark.parametrize("case", KEYRINGS["parse_errors"], ids=lambda c: c["name"])
def test_keyring_parse_errors(case: dict[str, Any]) -> None:
    with pytest.raises((KeyringError, NoKeysError)) as ei:
        parse_keyring(case["text"])
    assert str(ei.value) == case["error"]


@pytest.mark.parametrize("case", CODEC["commands"], ids=lambda c: c["name"])
def test_codec(case: dict[str, Any]) -> None:
    value = bytes.fromhex(case["value_hex"])
    c = decode(value)
    assert c.canonical_bytes().hex() == case["canonical_hex"]
    assert c.encode().hex() == case["encoded_hex"]
    assert c.signature == case["signature"]
    assert str(c.target) == case["record_key"]
    # Built from the fields (not from the bytes), it encodes the same.
    assert from_fields(case["command"]).encode().hex() == case["encoded_hex"]
    if case["keyring"]:
        signed = rings()[case["keyring"]].sign(c.unsigned())
        assert signed.signature == case["signature"]
        assert signed.encode().hex() == case["encoded_hex"]


@pytest.mark.parametrize("case", CODEC["decode_errors"], ids=lambda c: c["name"])
def test_decode_errors(case: dict[str, Any]) -> None:
    if case["name"] == "too_large":
        v = bytes.fromhex(CODEC["commands"][0]["value_hex"])
        value = v[:-1] + b" " * MAX_COMMAND_BYTES + b"}"
    else:
        value = bytes.fromhex(case["value_hex"])
    with pytest.raises(CommandError) as ei:
        decode(value)
    assert (ei.value.kind, ei.value.field) == (case["kind"], case["field"]), case["error"]
    if case["kind"] != "malformed" or "bad JSON" not in case["error"]:
        # Go's exact text, except for JSON syntax errors (each parser words
        # its own).
        assert str(ei.value) == case["error"]


@pytest.mark.parametrize("case", CODEC["encode_errors"], ids=lambda c: c["name"])
def test_encode_errors(case: dict[str, Any]) -> None:
    c = from_fields(case["command"])
    with pytest.raises(CommandError) as ei:
        c.canonical_bytes()
    assert ei.value.field == case["field"] and str(ei.value) == case["error"]
    with pytest.raises(CommandError):
        rings()["single"].sign(c)


@pytest.mark.parametrize("case", VERIFY["cases"], ids=lambda c: c["name"])
def test_verify(case: dict[str, Any]) -> None:
    c = decode(bytes.fromhex(case["value_hex"]))
    ring = rings()[case["keyring"]]
    if case["result"] == "ok":
        ring.verify(c, case["now_unix_nano"])
        return
    with pytest.raises(VerifyError) as ei:
        ring.verify(c, case["now_unix_nano"])
    assert ei.value.reason == case["result"]
    assert str(ei.value) == case["error"]


def decision_vector(d: Any, samples: list[float]) -> dict[str, Any]:
    return {
        "outcome": str(d.outcome), "fallback": d.fallback, "fraction": d.fraction, "probe": d.probe,
        "matched": d.matched, "target": str(d.command.target) if d.matched else "",
        "version": d.command.version if d.matched else 0,
        "admit": [[u, str(d.admit(u))] for u in samples],
    }


@pytest.mark.parametrize("seq", CLIENT["sequences"], ids=lambda s: s["name"])
def test_client_sequence(seq: dict[str, Any]) -> None:
    c = Client(keyring=rings()[seq["keyring"]] if seq["keyring"] else None, insecure_unsigned=seq["insecure"])
    for i, st in enumerate(seq["steps"]):
        where = f"step {i}: {st.get('comment', '')}"
        if st["op"] == "record":
            v = st.get("value_hex")
            got = c.handle(None if v is None else bytes.fromhex(v), st["now_unix_nano"])
            assert got == st["result"], where
        elif st["op"] == "decide":
            k = st["key"]
            d = c.decide(Key(k["tenant"], k["service"], k["model"], k["variant"]), st["now_unix_nano"])
            want = st["decision"]
            assert decision_vector(d, [a[0] for a in want["admit"]]) == want, where
        else:
            pytest.fail(f"unknown op {st['op']!r}")
    s = c.stats()
    records = sum(1 for st in seq["steps"] if st["op"] == "record")
    assert s.records == records
    assert s.applied == sum(1 for st in seq["steps"] if st.get("result") == "applied")


@pytest.mark.parametrize("f", [0.0, 1.0, 0.5, 0.1, 1 / 3, 1e-6, 9.99e-7, 1e-7, 5e-324, 1.5e-5, 0.30000000000000004,
                               123456.789, 1e20, 1e21, 1.7976931348623157e308, 2.2250738585072014e-308, 12.0])
def test_format_float_reads_back(f: float) -> None:
    s = format_float(f)
    assert float(s) == f
    assert ("e" in s) == (f != 0 and (abs(f) < 1e-6 or abs(f) >= 1e21))
    assert "e-0" not in s and "e+0" not in s and not s.endswith(".0")


def test_format_float_refuses_non_finite() -> None:
    for f in (math.nan, math.inf):
        with pytest.raises(ValueError):
            format_float(f)


def test_client_needs_keys() -> None:
    with pytest.raises(NoKeysError):
        Client()
