"""The Python client on real brokers (kfake and Apache Kafka), reading
commands that Go's package fuse signed and franz-go produced."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import Broker, wait_for
from fusebox_fuse import Client, FuseCommand, Key, Outcome, Reason, parse_keyring
from fusebox_fuse.kafka import ConfluentSource
from test_vectors import CLIENT, decision_vector, rings

MIN = 60 * 1_000_000_000


def secret() -> str:
    return os.urandom(32).hex()


def keyfile(tmp: Path, name: str, text: str) -> Path:
    p = tmp / name
    p.write_text(text)
    p.chmod(0o600)
    return p


def cmd(target: Key, version: int, action: str = "trip", *, state: str = "open", level: int = 2,
        issued: int | None = None, ttl: int = 10 * MIN, fallback: str = "", fraction: float = 0.0) -> FuseCommand:
    now = time.time_ns() if issued is None else issued
    if action == "degrade" and not fallback:
        fallback = "small-model"
    return FuseCommand(target=target, action=action, level=level, state=state, version=version,
                       issued_at_unix_nano=now, expires_at_unix_nano=now + ttl, fallback=fallback,
                       throttle_fraction=fraction, reasons=(Reason("tail/" + str(target), "p99.9 over budget"),))


def fields(c: FuseCommand) -> dict[str, Any]:
    d: dict[str, Any] = json.loads(c.encode())
    return d


def client_for(broker: Broker, topic: str, keys: str) -> Client:
    c = Client(keyring=parse_keyring(keys), source=ConfluentSource({"bootstrap.servers": broker.bootstrap}, topic))
    return c


def test_rebuild_then_follow_while_bad_records_flow(broker: Broker, topic: str, publishers: Any, tmp_path: Path) -> None:
    s = secret()
    keys = f"k1:{s}\n"
    pub = publishers(broker, topic, keyfile(tmp_path, "k1.keys", keys))
    targets = [Key("acme", "chat", f"model-{i}", "canary") for i in range(4)]
    t0 = time.time_ns()
    latest: dict[Key, bytes] = {}
    for v in range(1, 4):
        for i, t in enumerate(targets):
            action = ("trip", "degrade", "throttle")[(v + i) % 3]
            latest[t] = pub.command(fields(cmd(t, v, action, issued=t0 + v, fraction=0.25, level=1 if action != "trip" else 2)))
    # Noise in the history: a tombstone, garbage, a forgery claiming a newer
    # version, an unsigned command, an older command after the newest. They
    # go under record keys of their own: under a target's key, compaction
    # (fast on the Apache broker) would erase the target's valid command,
    # which is what fusebox's Guard repairs, not what a gateway can.
    pub.tombstone("noise-0")
    pub.raw("noise-1", b"\x00garbage")
    forged = cmd(targets[1], 99, "close", state="closed", level=0, issued=t0 + 50)
    pub.raw("noise-2", FuseCommand(**{**forged.__dict__, "key_id": "k1", "signature": "0" * 64}).encode())
    pub.raw("noise-3", cmd(targets[0], 100, "close", state="closed", level=0, issued=t0 + 60).encode())
    pub.command(fields(cmd(targets[2], 1, "close", state="closed", level=0, issued=t0)), key="noise-4")

    c = client_for(broker, topic, keys)
    applied: list[tuple[Key, int]] = []
    c.on_change(lambda old, new: applied.append((new.target, new.version)))
    c.start()
    try:
        assert c.wait_ready(60), "the client never caught up with the topic"
        for t in targets:
            got = c.state(t)
            assert got is not None and got.encode() == latest[t], f"{t}: rebuilt {got}"
        st = c.stats()
        assert st.rejected["malformed"] == 2 and st.rejected["bad_signature"] == 1
        assert st.rejected["unsigned"] == 1 and st.rejected["stale"] == 1
        # 12 valid commands; compaction may have left only each target's last.
        assert 4 <= st.applied <= 12 and st.records == st.applied + 5
        d = c.decide(Key("acme", "chat", "model-1", "canary"))
        assert d.matched and d.command is not None and d.command.version == 3

        # Follow: valid commands for target 0 every 20 ms over wall-clock
        # time, while bad records for target 1 flow beside them.
        stop = threading.Event()
        bad_sent = [0]

        def noise() -> None:
            bad = publishers(broker, topic, keyfile(tmp_path, "rogue.keys", f"k1:{secret()}\n"))
            n = 0
            while not stop.is_set():
                n += 1
                bad.command(fields(cmd(targets[1], 1000 + n, "close", state="closed", level=0)))  # wrong secret
                bad.raw(f"noise-{n}", b"{not json")
                bad.tombstone(f"noise-{n}")
                bad_sent[0] += 3
                time.sleep(0.01)

        th = threading.Thread(target=noise, daemon=True)
        th.start()
        want = []
        for v in range(10, 60):
            pub.command(fields(cmd(targets[0], v, "throttle", level=1, fraction=v / 100)))
            want.append(v)
            time.sleep(0.02)
            # Target 1 keeps the decision of its last valid command throughout.
            d1 = c.decide(targets[1])
            assert d1.command is not None and d1.command.version == 3
        stop.set()
        th.join(30)
        wait_for(lambda: c.state(targets[0]) is not None and c.state(targets[0]).version == 59, 30,  # type: ignore[union-attr]
                 "the last valid command")
        followed = [v for t, v in applied if t == targets[0] and v >= 10]
        assert followed == want, "every valid command applied, in order"
        d0 = c.decide(Key("acme", "chat", "model-0", "canary"))
        assert d0.outcome is Outcome.THROTTLE and d0.fraction == 0.59
        wait_for(lambda: c.stats().records >= st.records + len(want) + bad_sent[0], 30, "the bad records")
        st = c.stats()
        assert st.rejected["bad_signature"] >= 1 + bad_sent[0] // 3
        assert st.rejected["malformed"] >= 2 + 2 * bad_sent[0] // 3
    finally:
        c.stop()


def test_key_rotation_over_kafka(broker: Broker, topic: str, publishers: Any, tmp_path: Path) -> None:
    now = time.time_ns()
    old, new, ancient = secret(), secret(), secret()
    hour_from_now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // 10**9 + 3600))
    minute_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now // 10**9 - 60))
    t = Key("acme", "chat", "gpt-4o", "canary")
    p_old = publishers(broker, topic, keyfile(tmp_path, "old.keys", f"old:{old} not-after={hour_from_now}\n"))
    p_old.command(fields(cmd(t, 1, "trip", issued=now)), key="v1")
    p_new = publishers(broker, topic, keyfile(tmp_path, "new.keys", f"old:{old} not-after={hour_from_now}\nnew:{new} active\n"))
    v2 = p_new.command(fields(cmd(t, 2, "degrade", level=1, issued=now + 1)))
    # A key retired a minute ago (Go still signs a command issued before).
    p_anc = publishers(broker, topic, keyfile(tmp_path, "ancient.keys", f"ancient:{ancient} not-after={minute_ago}\n"))
    p_anc.command(fields(cmd(Key("acme", "chat", "gpt-4o", "*"), 1, issued=now - 2 * MIN)))
    p_rogue = publishers(broker, topic, keyfile(tmp_path, "rogue.keys", f"rogue:{secret()}\n"))
    p_rogue.command(fields(cmd(Key("acme", "*", "*", "*"), 1, issued=now)))
    p_imp = publishers(broker, topic, keyfile(tmp_path, "imp.keys", f"new:{secret()}\n"))
    p_imp.command(fields(cmd(t, 3, "close", state="closed", level=0, issued=now + 2)), key="impostor")

    during = client_for(broker, topic, f"old:{old} not-after={hour_from_now}\nnew:{new}\nancient:{ancient} not-after={minute_ago}\n")
    after = client_for(broker, topic, f"new:{new}\n")
    for c in (during, after):
        c.start()
    try:
        for c in (during, after):
            assert c.wait_ready(60)
            st = c.stats()
            got = c.state(t)
            assert got is not None and got.encode() == v2
            assert c.decide(t).outcome is Outcome.DEGRADE and c.decide(t).fallback == "small-model"
            assert c.decide(Key("acme", "search", "m", "v")).outcome is Outcome.ALLOW
            assert st.rejected["bad_signature"] == 1  # the impostor's "new"
        assert during.stats().rejected == {**during.stats().rejected, "key_retired": 1, "unknown_key": 1}
        assert during.stats().applied == 2
        # After the rotation the old key is unknown: v1 is not applied, v2 is.
        assert after.stats().rejected["unknown_key"] == 3 and after.stats().applied == 1
        assert during.stats().records == after.stats().records == 5
    finally:
        for c in (during, after):
            c.stop()


def single_clock_sequences() -> list[dict[str, Any]]:
    out = []
    for s in CLIENT["sequences"]:
        nows = {st["now_unix_nano"] for st in s["steps"] if st["op"] == "record"}
        if len(nows) == 1 and s["keyring"]:
            out.append(s)
    assert any(s["name"] == "decide" for s in out)
    return out


@pytest.mark.parametrize("seq", single_clock_sequences(), ids=lambda s: s["name"])
def test_vector_records_through_kafka(broker: Broker, topic: str, publishers: Any, tmp_path: Path, seq: dict[str, Any]) -> None:
    """The vectors' records (bytes Go wrote) go through the broker; the
    client, at the vectors' clock, decides as Go did."""
    keys = keyfile(tmp_path, "k.keys", f"k1:{secret()}\n")  # the publisher only relays raw bytes
    # One partition keeps the sequence's order; a key per record keeps
    # compaction (fast on the Apache broker) from merging them.
    pub = publishers(broker, topic, keys, partitions=1)
    records = [st for st in seq["steps"] if st["op"] == "record"]
    for i, st in enumerate(records):
        v = st.get("value_hex")
        if v is None:
            pub.tombstone(f"r{i}")
        else:
            pub.raw(f"r{i}", bytes.fromhex(v))
    clock_now = records[0]["now_unix_nano"]
    ring = rings()[seq["keyring"]]
    c = Client(keyring=ring, insecure_unsigned=seq["insecure"], clock=lambda: clock_now,
               source=ConfluentSource({"bootstrap.servers": broker.bootstrap}, topic))
    c.start()
    try:
        assert c.wait_ready(60)
        st = c.stats()
        assert st.records == len(records)
        assert st.applied == sum(1 for r in records if r["result"] == "applied")
        # The decisions after the last record: the state the whole topic gives.
        last = max(i for i, st in enumerate(seq["steps"]) if st["op"] == "record")
        final = [st for st in seq["steps"][last + 1:] if st["op"] == "decide"]
        assert final, "the sequence ends with decisions"
        for step in final:
            if step["op"] == "decide":
                k = step["key"]
                d = c.decide(Key(k["tenant"], k["service"], k["model"], k["variant"]), step["now_unix_nano"])
                want = step["decision"]
                assert decision_vector(d, [a[0] for a in want["admit"]]) == want, step.get("comment")
    finally:
        c.stop()


def test_empty_and_missing_topic(kfake_broker: Broker, topic: str, publishers: Any, tmp_path: Path) -> None:
    """A topic that does not exist yet is empty: ready at once, and the
    partitions are picked up when it appears."""
    s = secret()
    c = Client(keyring=parse_keyring(f"k1:{s}"),
               source=ConfluentSource({"bootstrap.servers": kfake_broker.bootstrap}, topic, metadata_interval=0.2))
    c.start()
    try:
        assert c.wait_ready(30)
        pub = publishers(kfake_broker, topic, keyfile(tmp_path, "k.keys", f"k1:{s}\n"))
        t = Key("a", "b", "c", "d")
        pub.command(fields(cmd(t, 1)))
        wait_for(lambda: c.state(t) is not None, 30, "the first command of a new topic")
        assert c.decide(t).outcome is Outcome.REJECT
    finally:
        c.stop()


def count_records(bootstrap: str, topic: str) -> int:
    """Records the topic holds now, read from the start by a plain consumer."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "count", "enable.auto.commit": False,
                  "enable.partition.eof": True, "auto.offset.reset": "earliest"})
    try:
        parts = sorted(c.list_topics(topic, timeout=10).topics[topic].partitions)
        c.assign([TopicPartition(topic, p, -2) for p in parts])
        n, eof = 0, set()
        deadline = time.monotonic() + 30
        while len(eof) < len(parts) and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                if m.error() is None:
                    n += 1
                elif m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
        return n
    finally:
        c.close()


def test_rebuild_after_real_compaction(apache_broker: Broker, topic: str, publishers: Any, tmp_path: Path) -> None:
    """On Apache Kafka, whose log cleaner really compacts (the harness's fast
    compaction): once older versions are gone, a new client rebuilds exactly
    the newest command of every target from what is left."""
    s = secret()
    pub = publishers(apache_broker, topic, keyfile(tmp_path, "k.keys", f"k1:{s}\n"))
    t0 = time.time_ns()
    targets = [Key("acme", "chat", f"m{i}", "v") for i in range(3)]
    latest = {}
    for v in range(1, 8):
        for t in targets:
            latest[t] = pub.command(fields(cmd(t, v, ("trip", "degrade", "throttle")[v % 3], level=1 + (v % 3 == 0), issued=t0 + v, fraction=0.5)))
    published = 7 * len(targets)
    started = time.monotonic()
    wait_for(lambda: count_records(apache_broker.bootstrap, topic) < published - len(targets), 90,
             "the log cleaner to compact older versions away")
    print(f"compacted after {time.monotonic() - started:.1f}s")
    c = client_for(apache_broker, topic, f"k1:{s}\n")
    c.start()
    try:
        assert c.wait_ready(60)
        for t in targets:
            got = c.state(t)
            assert got is not None and got.encode() == latest[t]
        st = c.stats()
        assert st.records < published - len(targets) and st.applied == st.records
    finally:
        c.stop()


def test_unreachable_broker_is_loud_and_not_ready(caplog: pytest.LogCaptureFixture) -> None:
    """No broker: the client retries, counts the failed opens, logs them,
    and never claims to be ready (decide then allows: fail open)."""
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = Client(keyring=parse_keyring(f"k1:{secret()}"),
               source=ConfluentSource({"bootstrap.servers": f"127.0.0.1:{port}", "socket.connection.setup.timeout.ms": 1000},
                                      "fusebox.fuse", timeout=1.0))
    with caplog.at_level("WARNING", logger="fusebox_fuse"):
        c.start()
        try:
            wait_for(lambda: c.stats().source_errors >= 1, 30, "a failed open")
            assert not c.ready and not c.wait_ready(0.5)
            assert c.decide(Key("a", "b", "c", "d")).outcome is Outcome.ALLOW
        finally:
            c.stop()
    assert any("opening the source failed" in r.getMessage() for r in caplog.records)


def test_keyring_from_env_and_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fusebox_fuse import NoKeysError, keyring_from_env, load_keyring_file

    a, b = secret(), secret()
    monkeypatch.setenv("FUSEBOX_FUSE_KEYS", f"old:{a} not-after=2030-01-01T00:00:00Z,new:{b}")
    kr = keyring_from_env()
    assert kr.ids == ("old", "new") and kr.active == "new" and a not in repr(kr)
    monkeypatch.setenv("FUSEBOX_FUSE_KEYS", " ")
    with pytest.raises(NoKeysError):
        keyring_from_env()
    p = keyfile(tmp_path, "f.keys", f"# rotation\nold:{a} active\nnew:{b}\n")
    assert load_keyring_file(str(p)).active == "old"
    p.write_text("k1:zz\n")
    with pytest.raises(Exception, match=r'entry 1 \(key id "k1"\): secret is not hex'):
        load_keyring_file(str(p))
