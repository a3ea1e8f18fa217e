"""The litellm Router adapter with litellm's mock responses (no provider is
called): deployments fusebox trips are dropped, the Router falls back, the
probe and throttle fractions are admitted."""

from __future__ import annotations

import asyncio
import collections
import os
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch of the price map
import litellm  # noqa: E402  # requirements-litellm.txt; scripts/test leaves this file out, loudly, only when litellm cannot be installed

from fusebox_fuse import Client, FuseCommand, Key, Reason, parse_keyring  # noqa: E402
from fusebox_fuse.litellm_router import FuseDeploymentFilter  # noqa: E402

RING = parse_keyring("k1:" + "cd" * 32)
NOW = 1_800_000_000 * 10**9
MIN = 60 * 10**9


def dep(group: str, model: str, variant: str, id: str) -> dict[str, Any]:
    return {"model_name": group,
            "litellm_params": {"model": model, "api_key": "sk-test", "mock_response": f"from {id}"},
            "model_info": {"id": id, "variant": variant, "fusebox_model": group}}


MODEL_LIST = [dep("gpt-4o", "openai/gpt-4o", "canary", "canary"), dep("gpt-4o", "azure/gpt-4o", "baseline", "baseline"),
              dep("gpt-4o-mini", "openai/gpt-4o-mini", "", "mini"), dep("solo", "openai/solo", "", "solo")]


@pytest.fixture
def fuse() -> Iterator[tuple[Client, FuseDeploymentFilter]]:
    c = Client(keyring=RING, clock=lambda: NOW)
    f = FuseDeploymentFilter(c, tenant="acme", service="chat")
    saved = list(litellm.callbacks)
    litellm.callbacks = [f]
    yield c, f
    litellm.callbacks = saved


def put(c: Client, target: Key, action: str, version: int = 1, *, state: str = "open", level: int = 2,
        fraction: float = 0.0, fallback: str = "") -> None:
    cmd = FuseCommand(target=target, action=action, level=level, state=state, version=version,
                      issued_at_unix_nano=NOW - MIN + version, expires_at_unix_nano=NOW + 10 * MIN, fallback=fallback,
                      throttle_fraction=fraction, reasons=(Reason("v", "test"),))
    assert c.handle(RING.sign(cmd).encode()) == "applied"


def route(n: int, group: str = "gpt-4o", **kw: Any) -> collections.Counter[str]:
    router = litellm.Router(model_list=MODEL_LIST, fallbacks=[{"gpt-4o": ["gpt-4o-mini"]}, {"solo": ["gpt-4o-mini"]}],
                            num_retries=0)

    async def go() -> collections.Counter[str]:
        got: collections.Counter[str] = collections.Counter()
        for _ in range(n):
            r = await router.acompletion(model=group, messages=[{"role": "user", "content": "hi"}], **kw)
            got[r.choices[0].message.content.removeprefix("from ")] += 1
        return got

    return asyncio.run(go())


def test_nothing_in_effect_uses_every_deployment(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    got = route(40)
    assert set(got) == {"canary", "baseline"}
    assert fuse[1].kept == 80 and sum(fuse[1].dropped.values()) == 0


def test_tripped_deployment_is_dropped(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    c, f = fuse
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "trip")
    assert route(30) == {"baseline": 30}
    assert f.dropped["reject"] == 30
    # Another tenant is not affected.
    assert set(route(30, metadata={"tenant": "other"})) == {"canary", "baseline"}


def test_all_dropped_falls_back(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    c, f = fuse
    put(c, Key("*", "*", "gpt-4o", "*"), "degrade", level=1, fallback="gpt-4o-mini")
    assert route(20) == {"mini": 20}
    assert f.dropped["degrade"] == 40
    # The close lifts it, live.
    put(c, Key("*", "*", "gpt-4o", "*"), "close", 2, state="closed", level=0)
    assert set(route(20)) == {"canary", "baseline"}


def test_rollback_drops_the_canary(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    c, _ = fuse
    put(c, Key("acme", "chat", "gpt-4o", "canary"), "rollback", level=1)
    assert route(20) == {"baseline": 20}


def test_half_open_probe_fraction(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    c, _ = fuse
    put(c, Key("acme", "chat", "solo", ""), "half_open", state="half_open", fraction=0.25)
    got = route(200, group="solo")
    # One sample per request (kept across the fallback's second filter
    # call), n*phi mod 1: the admitted share within 2 of the fraction.
    assert got["solo"] + got["mini"] == 200 and abs(got["solo"] - 50) <= 2, got


def test_throttle_fraction_with_sticky_request_ids(fuse: tuple[Client, FuseDeploymentFilter]) -> None:
    c, f = fuse
    put(c, Key("acme", "chat", "solo", ""), "throttle", level=1, fraction=0.5)
    got = route(200, group="solo")
    assert got["solo"] + got["mini"] == 200 and abs(got["solo"] - 100) <= 2, got
    # A request id gives the same answer every time.
    for rid in ("r-1", "r-2", "r-3"):
        assert len(route(3, group="solo", metadata={"request_id": rid})) == 1
