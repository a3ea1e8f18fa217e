"""The litellm Router adapter as its users run it: a real litellm.Router
(1.110.2) over a local OpenAI-compatible server (tests/openai_server.py: real
HTTP, plain and streamed), steered by FuseDeploymentFilter.install, with
commands applied through a Client (signed in Python here; signed by Go's
package fuse and read from kfake and Apache Kafka in the broker test)."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the price map
import litellm  # noqa: E402  # requirements-litellm.txt; scripts/test leaves this file out, loudly, only when litellm cannot be installed

from conftest import Broker, wait_for  # noqa: E402
from fusebox_fuse import Client, FuseCommand, Key, Reason, parse_keyring  # noqa: E402
from fusebox_fuse.kafka import ConfluentSource  # noqa: E402
from fusebox_fuse.litellm_router import CircuitOpenError, FuseDeploymentFilter  # noqa: E402
from openai_server import OpenAIServer  # noqa: E402

RING = parse_keyring("k1:" + "cd" * 32)
NOW = 1_800_000_000 * 10**9
MIN = 60 * 10**9
MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    s = OpenAIServer()
    yield s
    s.close()


def dep(server: OpenAIServer, group: str, id: str, variant: str = "", *, model: str = "openai/gpt-4o",
        fusebox_model: str | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {"id": id, "variant": variant}
    if fusebox_model != "":
        info["fusebox_model"] = fusebox_model or group
    return {"model_name": group, "litellm_params": {"model": model, "api_base": server.base(id), "api_key": "sk-test"},
            "model_info": info}


def model_list(server: OpenAIServer) -> list[dict[str, Any]]:
    return [dep(server, "gpt-4o", "canary", "canary"), dep(server, "gpt-4o", "baseline", "baseline"),
            dep(server, "gpt-4o-mini", "mini", model="openai/gpt-4o-mini"),
            dep(server, "solo", "solo", model="openai/solo"),
            dep(server, "pool", "p1", "p1"), dep(server, "pool", "p2", "p2"), dep(server, "pool", "p3", "p3"),
            dep(server, "emb", "emb-a", "a", model="openai/text-embedding-3-small"),
            dep(server, "emb", "emb-b", "b", model="openai/text-embedding-3-small")]


@pytest.fixture
def saved_callbacks() -> Iterator[None]:
    saved = list(litellm.callbacks)
    yield
    litellm.callbacks = saved


def steered(server: OpenAIServer, c: Client, fallbacks: list[dict[str, list[str]]] | None = None,
            **kw: Any) -> tuple[Any, FuseDeploymentFilter]:
    router = litellm.Router(model_list=model_list(server), num_retries=0, fallbacks=fallbacks or [])
    f = FuseDeploymentFilter(c, tenant="acme", service="chat", clock=lambda: NOW, **kw)
    f.install(router)
    server.take()
    return router, f


def put(c: Client, target: Key, action: str, version: int = 1, *, state: str = "open", level: int = 2,
        fraction: float = 0.0, fallback: str = "") -> None:
    cmd = FuseCommand(target=target, action=action, level=level, state=state, version=version,
                      issued_at_unix_nano=NOW - MIN + version, expires_at_unix_nano=NOW + 10 * MIN, fallback=fallback,
                      throttle_fraction=fraction, reasons=(Reason("v", "test"),))
    assert c.handle(RING.sign(cmd).encode()) == "applied"


def client() -> Client:
    return Client(keyring=RING, clock=lambda: NOW)


# --- every entry point, sync and async --------------------------------------

def call_all(router: Any, n: int) -> None:
    """n requests through each entry point the Router routes: completion,
    streamed completion, text completion, embedding, and their async forms."""
    for _ in range(n):
        r = router.completion(model="gpt-4o", messages=MSG)
        assert r.choices[0].message.content.startswith("from ")
        text = "".join(ch.choices[0].delta.content or "" for ch in router.completion(model="gpt-4o", messages=MSG,
                                                                                      stream=True))
        assert text.startswith("from ")
        router.embedding(model="emb", input=["x"])
        assert router.text_completion(model="gpt-4o", prompt="hi").choices[0].text.startswith("from ")

    async def go() -> None:
        for _ in range(n):
            await router.acompletion(model="gpt-4o", messages=MSG)
            st = await router.acompletion(model="gpt-4o", messages=MSG, stream=True)
            assert "".join([ch.choices[0].delta.content or "" async for ch in st]).startswith("from ")
            await router.aembedding(model="emb", input=["x"])
            assert (await router.atext_completion(model="gpt-4o", prompt="hi")).choices[0].text.startswith("from ")

    asyncio.run(go())


def test_every_entry_point_is_steered_sync_and_async(server: OpenAIServer, saved_callbacks: None) -> None:
    c = client()
    router, f = steered(server, c)
    call_all(router, 6)
    hits = server.take()
    # Nothing in effect: the Router's own shuffle over both deployments of each group.
    assert hits["canary"] + hits["baseline"] == 36 and hits["emb-a"] + hits["emb-b"] == 12, hits
    assert hits["canary"] and hits["baseline"] and hits["emb-a"] and hits["emb-b"], hits
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "trip")
    put(c, Key("acme", "chat", "emb", "a"), "trip")
    call_all(router, 10)
    hits = server.take()
    # 10 requests x (completion, stream, text completion; sync and async) to the baseline, none to the canary.
    assert hits == {"baseline": 60, "emb-b": 20}, hits
    assert f.metrics.get("gpt-4o", "canary", "reject") == 60 and f.metrics.get("emb", "emb-a", "reject") == 20
    assert f.metrics.get("gpt-4o", "baseline", "pass") == 96
    # Another tenant is not affected, on the sync path too.
    for _ in range(20):
        router.completion(model="gpt-4o", messages=MSG, metadata={"tenant": "other"})
    assert set(server.take()) == {"canary", "baseline"}
    # Positional calls, as litellm's signatures take them (model first), are steered the same.
    for _ in range(5):
        assert router.completion("gpt-4o", MSG).choices[0].message.content == "from baseline"
        assert router.text_completion("gpt-4o", "hi").choices[0].text == "from baseline"
        router.embedding("emb", ["x"])

    async def positional() -> None:
        for _ in range(5):
            await router.acompletion("gpt-4o", MSG)
            await router.aembedding("emb", ["x"])
            await router.atext_completion("gpt-4o", "hi")

    asyncio.run(positional())
    assert server.take() == {"baseline": 20, "emb-b": 10}
    # A model that is not a str reaches litellm as given (its own error), never dropped from the call.
    with pytest.raises(litellm.BadRequestError, match="model=None"):
        router.completion(model=None, messages=MSG)


def test_two_routers_two_filters_and_uninstall(server: OpenAIServer, saved_callbacks: None) -> None:
    """litellm.callbacks is process-wide: filter A's async filter sees every
    Router's requests. Router B's (planned by filter B) and a third,
    unsteered Router's pass A's filter untouched; uninstall gives Router A
    back its own methods and takes A off litellm.callbacks."""
    ca, cb = client(), client()
    router_a, fa = steered(server, ca)
    router_b, fb = steered(server, cb)
    plain = litellm.Router(model_list=[dep(server, "gpt-4o", "c1", "canary"), dep(server, "gpt-4o", "c2", "baseline")],
                           num_retries=0)
    put(ca, Key("acme", "chat", "gpt-4o", "canary"), "trip")  # for filter A only

    async def go(router: Any, n: int) -> None:
        for _ in range(n):
            await router.acompletion(model="gpt-4o", messages=MSG)

    asyncio.run(go(router_a, 20))
    assert server.take() == {"baseline": 20}
    asyncio.run(go(router_b, 40))
    assert set(server.take()) == {"canary", "baseline"}  # A's command does not steer B
    asyncio.run(go(plain, 40))
    assert set(server.take()) == {"c1", "c2"}  # nor a Router no filter was installed on
    assert fa.metrics.get("gpt-4o", "c1", "reject") == 0 and fb.metrics.get("gpt-4o", "canary", "pass") == 40
    fa.uninstall()
    assert fa not in litellm.callbacks and fb in litellm.callbacks
    assert not hasattr(router_a.completion, "__fusebox_wrapped__")
    for _ in range(20):
        router_a.completion(model="gpt-4o", messages=MSG)
    asyncio.run(go(router_a, 20))
    assert set(server.take()) == {"canary", "baseline"}
    fb.uninstall()
    assert fb not in litellm.callbacks


# --- shares -----------------------------------------------------------------

def test_half_open_and_throttle_shares_of_the_group(server: OpenAIServer, saved_callbacks: None) -> None:
    """Three deployments: p1 half-open (probe 0.2), p2 throttled to 0.3, p3
    free. The probe share is the share of the group's requests p1 takes (not
    divided by the Router's shuffle among three); the throttle admits 0.3 of
    p2's even share (1/3 of the group's requests: 0.1) and sheds the rest, as
    fusebox's Go gateway admits Fraction of the target's requests."""
    c = client()
    router, f = steered(server, c)
    put(c, Key("acme", "chat", "pool", "p1"), "half_open", state="half_open", fraction=0.2)
    put(c, Key("acme", "chat", "pool", "p2"), "throttle", level=1, fraction=0.3)
    n = 1000
    for _ in range(n // 2):
        router.completion(model="pool", messages=MSG)

    async def go() -> None:
        for _ in range(n - n // 2):
            await router.acompletion(model="pool", messages=MSG)

    asyncio.run(go())
    hits = server.take()
    share = {k: v / n for k, v in hits.items()}
    print(f"shares over n={n}: {share}")
    assert sum(hits.values()) == n
    # n*phi mod 1 samples: the discrepancy over 1,000 requests is far below 0.01.
    assert abs(share["p1"] - 0.2) <= 0.01 and abs(share["p2"] - 0.1) <= 0.01, share
    assert abs(share["p3"] - 0.7) <= 0.01, share
    assert f.metrics.get("pool", "p1", "probe") == hits["p1"] and f.metrics.get("pool", "p2", "admit") == hits["p2"]
    assert f.metrics.get("pool", "p1", "reject") + f.metrics.get("pool", "p1", "yielded") == n - hits["p1"]


def test_shares_with_random_request_ids(server: OpenAIServer, saved_callbacks: None) -> None:
    """The shares again, sampled as real gateways sample: the FNV-1a hash of
    each request's metadata["request_id"] (random UUIDs, from a seeded
    generator so a run repeats), not the n*phi sequence. Each share is a
    binomial proportion: within 3 standard deviations sqrt(p(1-p)/n)."""
    c = client()
    router, f = steered(server, c)
    put(c, Key("acme", "chat", "pool", "p1"), "half_open", state="half_open", fraction=0.2)
    put(c, Key("acme", "chat", "pool", "p2"), "throttle", level=1, fraction=0.3)
    rng = random.Random(20261202)
    n = 1200

    def md() -> dict[str, str]:
        return {"request_id": str(uuid.UUID(int=rng.getrandbits(128)))}

    for _ in range(n // 2):
        router.completion(model="pool", messages=MSG, metadata=md())

    async def go() -> None:
        for _ in range(n - n // 2):
            await router.acompletion(model="pool", messages=MSG, metadata=md())

    asyncio.run(go())
    hits = server.take()
    assert sum(hits.values()) == n, hits
    want = {"p1": 0.2, "p2": 0.3 / 3, "p3": 1 - 0.2 - 0.1}
    for k, p in want.items():
        tol = 3 * math.sqrt(p * (1 - p) / n)
        print(f"random request ids, n={n}: {k} took {hits[k] / n:.3f} (want {p:.3f} +- {tol:.3f})")
        assert abs(hits[k] / n - p) <= tol, (k, hits)
    assert f.metrics.get("pool", "p1", "probe") == hits["p1"]


def test_a_throttle_only_sheds_load(server: OpenAIServer, saved_callbacks: None) -> None:
    """A throttle of 0.8 above the even share (1/2 in a group of two): the
    throttled canary takes 0.8 x 1/2 = 0.4 of the group's requests, less than
    the 0.5 it had unthrottled, never 0.8."""
    c = client()
    router, f = steered(server, c)
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "throttle", level=1, fraction=0.8)
    n = 500
    for _ in range(n):
        router.completion(model="gpt-4o", messages=MSG)
    hits = server.take()
    assert hits["canary"] + hits["baseline"] == n, hits
    assert abs(hits["canary"] / n - 0.4) <= 0.01, hits
    assert f.metrics.get("gpt-4o", "canary", "admit") == hits["canary"]


def test_a_failed_probe_is_not_retried_on_the_other_deployments(server: OpenAIServer, saved_callbacks: None) -> None:
    """As fusebox's Go gateway (fusehttp passes a probe to its target and
    answers with the target's response, failed or not), a request in a
    half-open deployment's probe slice stays on it for all of the Router's
    retries: the baseline never serves it. The Router's fallbacks= to another
    group still take it (that group decided in turn)."""
    c = client()
    router = litellm.Router(model_list=model_list(server), num_retries=1, retry_after=0,
                            fallbacks=[{"gpt-4o": ["gpt-4o-mini"]}])
    f = FuseDeploymentFilter(c, tenant="acme", service="chat", clock=lambda: NOW)
    f.install(router)
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "half_open", state="half_open", fraction=0.5)
    server.failing.add("canary")
    try:
        server.take()
        n = 20
        for _ in range(n):
            router.completion(model="gpt-4o", messages=MSG)
        hits = server.take()
    finally:
        server.failing.discard("canary")
    probes = f.metrics.get("gpt-4o", "canary", "probe")
    assert 0 < probes < n, probes
    assert hits["baseline"] == n - probes and hits["mini"] == probes and hits["canary"] >= 1, (probes, hits)


def test_half_open_alone_in_its_group_probes_its_share(server: OpenAIServer, saved_callbacks: None) -> None:
    c = client()
    router, _ = steered(server, c, fallbacks=[{"solo": ["gpt-4o-mini"]}])
    put(c, Key("acme", "chat", "solo", ""), "half_open", state="half_open", fraction=0.1)
    for _ in range(200):
        router.completion(model="solo", messages=MSG)
    hits = server.take()
    # The refused share goes to the Router's fallback: one sample per request, kept across the fallback hop.
    assert hits["solo"] + hits["mini"] == 200 and abs(hits["solo"] - 20) <= 2, hits


def test_a_request_decides_only_the_groups_it_can_reach(server: OpenAIServer, saved_callbacks: None) -> None:
    """Per request: the requested group and its fallbacks, not every
    deployment of every group; the Router's deployments read once."""
    class Counting:
        def __init__(self, c: Client) -> None:
            self.c = c
            self.keys: list[Key] = []

        def decide(self, key: Key) -> Any:
            self.keys.append(key)
            return self.c.decide(key)

    c = client()
    d = Counting(c)
    router = litellm.Router(model_list=model_list(server), num_retries=0, fallbacks=[{"gpt-4o": ["gpt-4o-mini"]}])
    FuseDeploymentFilter(d, tenant="acme", service="chat", clock=lambda: NOW).install(router)
    reads = 0
    registry = router.registry

    class Reg:
        def deployments(self) -> Any:
            nonlocal reads
            reads += 1
            return registry().deployments()

    router.registry = lambda: Reg()
    put(c, Key("acme", "chat", "solo", ""), "trip")
    d.keys.clear()
    router.completion(model="gpt-4o", messages=MSG)
    assert sorted(k.model for k in d.keys) == ["gpt-4o", "gpt-4o", "gpt-4o-mini"] and reads == 1, (d.keys, reads)
    d.keys.clear()
    reads = 0
    with pytest.raises(CircuitOpenError):
        router.completion(model="solo", messages=MSG)
    assert [k.model for k in d.keys] == ["solo"] and reads == 1, (d.keys, reads)


# --- degrade, no fallback ---------------------------------------------------

def test_degrade_routes_to_the_commands_fallback(server: OpenAIServer, saved_callbacks: None) -> None:
    c = client()
    router, f = steered(server, c)  # no fallbacks= at all
    put(c, Key("*", "*", "gpt-4o", "*"), "degrade", level=1, fallback="gpt-4o-mini")
    for _ in range(10):
        router.completion(model="gpt-4o", messages=MSG)

    async def go() -> None:
        for _ in range(10):
            st = await router.acompletion(model="gpt-4o", messages=MSG, stream=True)
            assert "".join([ch.choices[0].delta.content or "" async for ch in st]) == "from mini"

    asyncio.run(go())
    assert server.take() == {"mini": 20}
    assert f.metrics.get("gpt-4o", "canary", "degrade") == 20
    # The close lifts it, live.
    put(c, Key("*", "*", "gpt-4o", "*"), "close", 2, state="closed", level=0)
    for _ in range(10):
        router.completion(model="gpt-4o", messages=MSG)
    assert set(server.take()) == {"canary", "baseline"}


def test_refused_group_without_fallback_is_circuit_open_and_warned(server: OpenAIServer, saved_callbacks: None,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    c = client()
    put(c, Key("acme", "chat", "solo", ""), "trip")
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        router, _ = steered(server, c)
    start = [r.getMessage() for r in caplog.records if "'solo'" in r.getMessage() and "no fallback" in r.getMessage()]
    assert start, caplog.text
    with pytest.raises(CircuitOpenError) as e:
        router.completion(model="solo", messages=MSG)
    assert e.value.status_code == 503 and e.value.code == "circuit_open" and e.value.retry_after == 600
    assert "circuit open" in str(e.value) and "trip" in str(e.value)
    with pytest.raises(CircuitOpenError):
        asyncio.run(router.acompletion(model="solo", messages=MSG))
    assert server.take() == {}
    # The call's own fallbacks= (litellm's per-request override) take the request.
    assert router.completion(model="solo", messages=MSG, fallbacks=[{"solo": ["gpt-4o-mini"]}]).choices[
        0].message.content == "from mini"
    asyncio.run(router.acompletion(model="solo", messages=MSG, fallbacks=[{"solo": ["gpt-4o-mini"]}]))
    assert server.take() == {"mini": 2}
    # A command applied later is checked too (on_change): a degrade naming a model the Router does not know.
    caplog.clear()
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        put(c, Key("acme", "chat", "gpt-4o", "*"), "degrade", level=1, fallback="no-such-model")
    msgs = caplog.text
    assert "'gpt-4o'" in msgs and "'no-such-model'" in msgs and "does not know" in msgs, msgs
    with pytest.raises(CircuitOpenError):
        router.completion(model="gpt-4o", messages=MSG)


def test_fallback_warnings_remembered_are_bounded(server: OpenAIServer, saved_callbacks: None,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """Every new command is a new problem (its version is in the text): the
    remembered set keeps the newest _MAX_WARNED, never grows without bound."""
    from fusebox_fuse import litellm_router
    monkeypatch.setattr(litellm_router, "_MAX_WARNED", 8)
    c = client()
    _, f = steered(server, c)
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        for v in range(1, 41):
            put(c, Key("acme", "chat", "solo", ""), "trip", v)
    assert len(f._warned) <= 8, len(f._warned)
    assert sum("'solo'" in r.getMessage() for r in caplog.records) == 40  # each new one still logged once


def test_install_checks_the_litellm_internals_it_uses(server: OpenAIServer, saved_callbacks: None,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    class NotARouter:
        def completion(self, **kw: Any) -> Any:
            return kw

    with pytest.raises(RuntimeError, match=r"registry\(\)\.deployments\(\).*settings\(\)\.fallbacks.*1\.110\.2"):
        FuseDeploymentFilter(client()).install(NotARouter())
    from litellm.litellm_core_utils import routing_common_utils
    router = litellm.Router(model_list=model_list(server), num_retries=0)
    with monkeypatch.context() as m:
        m.delattr(routing_common_utils, "as_excluded_deployment_ids")
        with pytest.raises(RuntimeError, match=r"_excluded_deployment_ids.*1\.110\.2"):
            FuseDeploymentFilter(client()).install(router)
    # A settings() failing later is logged (once), not swallowed: no fallbacks known.
    c = client()
    router, f = steered(server, c)

    def broken() -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(router, "settings", broken)
    put(c, Key("acme", "chat", "solo", ""), "trip")
    with caplog.at_level(logging.ERROR, "fusebox_fuse"):
        for _ in range(3):
            with pytest.raises(CircuitOpenError):
                router.completion(model="solo", messages=MSG)
    failed = [r for r in caplog.records if "settings().fallbacks failed" in r.getMessage()]
    assert len(failed) == 1 and "boom" in caplog.text, caplog.text


# --- the mapping ------------------------------------------------------------

def test_unmapped_and_ambiguous_deployments_are_warned(server: OpenAIServer, saved_callbacks: None,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    ml = [dep(server, "chat", "east", fusebox_model="", model="openai/gpt-4o"),
          dep(server, "chat", "west", fusebox_model="", model="azure/gpt-4o")]
    router = litellm.Router(model_list=ml, num_retries=0)
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        FuseDeploymentFilter(client(), tenant="acme", service="chat").install(router)
    text = caplog.text
    assert "'east'" in text and "'west'" in text and "fusebox_model" in text, text
    assert "share the key" in text and "variant" in text, text
    # Keyed by the model group the caller asks for, never by the provider-prefixed litellm model.
    with pytest.raises(ValueError, match="already steered"):
        FuseDeploymentFilter(client()).install(router)
    c = client()
    router = FuseDeploymentFilter(c, tenant="acme", service="chat").install(litellm.Router(model_list=ml, num_retries=0))
    put(c, Key("acme", "chat", "chat", ""), "degrade", level=1, fallback="x")
    with pytest.raises(CircuitOpenError):
        router.completion(model="chat", messages=MSG)


# --- logs and metrics -------------------------------------------------------

def test_rejections_logged_at_warning_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    c = Client(keyring=RING, clock=lambda: NOW)
    old = FuseCommand(target=Key("acme", "chat", "m", ""), action="trip", level=2, state="open", version=1,
                      issued_at_unix_nano=NOW - 20 * MIN, expires_at_unix_nano=NOW - 10 * MIN,
                      reasons=(Reason("v", "t"),))
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        for v in range(1, 4):
            assert c.handle(RING.sign(FuseCommand(**{**old.__dict__, "version": v})).encode()) == "expired"
        assert c.handle(b"{not json") == "malformed"
    warned = [r for r in caplog.records if r.levelno == logging.WARNING]
    expired = [r.getMessage() for r in warned if "reason=expired" in r.getMessage()]
    assert len(expired) == 1 and "600.0s ago" in expired[0] and "clock skew" in expired[0], expired
    assert any("reason=malformed" in r.getMessage() for r in warned)
    assert c.stats().rejected["expired"] == 3


def test_metrics_and_drop_logs(server: OpenAIServer, saved_callbacks: None, caplog: pytest.LogCaptureFixture) -> None:
    c = client()
    router, f = steered(server, c)
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "trip", 7)
    with caplog.at_level(logging.INFO, "fusebox_fuse.litellm"):
        for _ in range(5):
            router.completion(model="gpt-4o", messages=MSG)
    drops = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert len(drops) == 1 and "'canary'" in drops[0] and "version=7" in drops[0], drops
    text = f.metrics.render()
    assert ('fusebox_litellm_deployment_decisions_total{model_group="gpt-4o",deployment="canary",decision="reject"} 5'
            in text), text
    assert 'deployment="baseline",decision="pass"} 5' in text and "# TYPE fusebox_litellm_deployment_decisions_total counter" in text


def test_no_broker_is_a_warning_and_librdkafka_logs_through_python(caplog: pytest.LogCaptureFixture,
                                                                   capfd: pytest.CaptureFixture[str]) -> None:
    c = Client(keyring=RING, source=ConfluentSource({"bootstrap.servers": "127.0.0.1:1"}, timeout=1.0),
               ready_warning_after=1.0)
    with caplog.at_level(logging.WARNING, "fusebox_fuse"):
        c.start()
        try:
            wait_for(lambda: any("not ready after" in r.getMessage() for r in caplog.records), 30, "the not-ready warning")
        finally:
            c.stop()
    rdk = [r for r in caplog.records if r.name == "fusebox_fuse.kafka"]
    assert rdk and all("librdkafka" in r.getMessage() for r in rdk), caplog.text
    assert "fail open" in caplog.text
    # Nothing of librdkafka's on stderr, and its repeats are held back.
    assert "Connection refused" not in capfd.readouterr().err
    assert len(rdk) < 20, len(rdk)


# --- on real brokers, commands signed by Go ----------------------------------

def test_commands_from_the_broker_steer_the_router(broker: Broker, topic: str, publishers: Any, tmp_path: Path,
                                                   server: OpenAIServer, saved_callbacks: None) -> None:
    secret = os.urandom(32).hex()
    keys = tmp_path / "k.keys"
    keys.write_text(f"k1:{secret}\n")
    keys.chmod(0o600)
    pub = publishers(broker, topic, keys)
    c = Client(keyring=parse_keyring(f"k1:{secret}\n"), source=ConfluentSource({"bootstrap.servers": broker.bootstrap},
                                                                               topic))
    c.start()
    try:
        assert c.wait_ready(60)
        router = litellm.Router(model_list=model_list(server), num_retries=0)
        FuseDeploymentFilter(c, tenant="acme", service="chat").install(router)
        server.take()
        now = time.time_ns()
        target = Key("acme", "chat", "gpt-4o", "canary")

        def publish(action: str, version: int, **kw: Any) -> float:
            cmd = FuseCommand(target=target, action=action, version=version, issued_at_unix_nano=now + version,
                              expires_at_unix_nano=now + 10 * MIN, reasons=(Reason("v", "test"),), **kw)
            pub.command(json.loads(cmd.encode()))
            return time.monotonic()

        def effect_after(since: float, applied: Any) -> float:
            """Seconds from the publisher's ack until the Router's requests are decided by the command."""
            deadline = since + 30
            while not applied(c.decide(target)):
                if time.monotonic() > deadline:
                    pytest.fail("no effect within 30s")
                time.sleep(0.001)
            return time.monotonic() - since

        t_trip = effect_after(publish("trip", 1, level=2, state="open"), lambda d: d.matched)
        for _ in range(20):
            router.completion(model="gpt-4o", messages=MSG)
        assert server.take() == {"baseline": 20}
        # The half-open's probe share arrives too: 0.5 of the group's requests to the canary.
        t_half = effect_after(publish("half_open", 2, level=2, state="half_open", throttle_fraction=0.5),
                              lambda d: d.probe)
        for _ in range(100):
            router.completion(model="gpt-4o", messages=MSG)
        hits = server.take()
        assert abs(hits["canary"] - 50) <= 2 and hits["canary"] + hits["baseline"] == 100, hits
        t_close = effect_after(publish("close", 3, level=0, state="closed"), lambda d: not d.matched)
        for _ in range(20):
            router.completion(model="gpt-4o", messages=MSG)
        assert set(server.take()) == {"canary", "baseline"}
        print(f"{broker.kind}: publish (ack) to effect: trip {1000 * t_trip:.0f} ms, half-open {1000 * t_half:.0f} ms, "
              f"close {1000 * t_close:.0f} ms")
    finally:
        c.stop()
