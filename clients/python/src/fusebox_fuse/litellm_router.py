"""A litellm Router adapter: fusebox's decisions as a deployment filter.

    import litellm
    from fusebox_fuse.litellm_router import FuseDeploymentFilter
    litellm.callbacks.append(FuseDeploymentFilter(client, service="chat"))
    router = litellm.Router(model_list=[...], fallbacks=[{"gpt-4o": ["gpt-4o-mini"]}])

For every request the Router routes, each candidate deployment's key
(tenant, service, model, variant) is decided, and the deployment is kept only
when the decision admits the request (one sample per request, as the ASGI
middleware draws it):

- nothing in effect, a throttle's admitted share, a half-open probe's
  share: kept;
- trip, degrade, rollback, a throttle's refused share, the non-probe share
  of a half-open target: dropped.

When every deployment of the group is dropped the Router falls back as it
is configured to (``fallbacks=``: a degrade's fallback model belongs there,
the canary's baseline among the group's deployments for a rollback); with
no fallback the caller gets litellm's no-deployments error. Keys: the
tenant and service from the request's ``metadata`` ("tenant", "service")
over the filter's defaults; the model from the deployment's
``model_info["fusebox_model"]``, else its ``litellm_params["model"]``; the
variant from ``model_info["variant"]`` (default "").

Needs litellm (not a dependency of fusebox-fuse; tested with litellm 1.110.2).
"""

from __future__ import annotations

import collections
import itertools
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from .asgi import PHI, Decider, fnv1a64
from .client import Decision, Outcome
from .command import Key

_MAX_DRAWN = 4096  # requests whose sample is remembered (one Router attempt chain each)

KeyFor = Callable[[Mapping[str, Any], Mapping[str, Any]], Key]
"""(deployment, request_kwargs) -> the key fusebox judges."""


class FuseDeploymentFilter(CustomLogger):
    """Drops the deployments fusebox's commands refuse; see the module doc."""

    def __init__(self, decider: Decider, *, tenant: str = "", service: str = "", variant: str = "",
                 key_for: KeyFor | None = None, sampler: Callable[[Mapping[str, Any]], float] | None = None) -> None:
        super().__init__()
        self.decider = decider
        self.tenant, self.service, self.variant = tenant, service, variant
        self.key_for = key_for or self._default_key
        self.sampler = sampler
        self._seq = itertools.count(1)
        self._drawn: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._lock = threading.Lock()
        self.kept = 0
        self.dropped: dict[str, int] = {o.value: 0 for o in Outcome}

    def _default_key(self, deployment: Mapping[str, Any], request: Mapping[str, Any]) -> Key:
        md = request.get("metadata") or {}
        info = deployment.get("model_info") or {}
        params = deployment.get("litellm_params") or {}
        return Key(str(md.get("tenant", self.tenant)), str(md.get("service", self.service)),
                   str(info.get("fusebox_model") or params.get("model", "")), str(info.get("variant", self.variant)))

    def sample(self, request: Mapping[str, Any]) -> float:
        """The request's uniform sample in [0, 1): the sampler's, else the
        FNV-1a hash of metadata["request_id"], else the next n*phi mod 1,
        drawn once per request (litellm_trace_id): the Router filters again
        for a retry or a fallback group, and must not redraw."""
        if self.sampler is not None:
            u = self.sampler(request)
            return 0.0 if not (u >= 0) else min(u, math.nextafter(1.0, 0.0))
        rid = (request.get("metadata") or {}).get("request_id")
        if isinstance(rid, str) and rid:
            return (fnv1a64(rid.encode()) >> 11) / (1 << 53)
        trace = request.get("litellm_trace_id")
        with self._lock:
            if isinstance(trace, str) and trace in self._drawn:
                return self._drawn[trace]
            x = float(next(self._seq)) * PHI
            u = x - math.floor(x)
            if isinstance(trace, str):
                self._drawn[trace] = u
                while len(self._drawn) > _MAX_DRAWN:
                    self._drawn.popitem(last=False)
        return u

    def decide(self, deployment: Mapping[str, Any], request: Mapping[str, Any], u: float) -> tuple[bool, Decision]:
        """Whether the deployment takes the request with sample u, and why."""
        d = self.decider.decide(self.key_for(deployment, request))
        return (not d.matched or d.admit(u) is Outcome.ALLOW), d

    async def async_filter_deployments(self, model: str, healthy_deployments: list[Any], messages: Any,
                                       request_kwargs: dict[str, Any] | None = None,
                                       parent_otel_span: Any = None) -> list[Any]:
        request = request_kwargs or {}
        u = self.sample(request)
        out = []
        for dep in healthy_deployments:
            keep, d = self.decide(dep, request, u)
            with self._lock:
                if keep:
                    self.kept += 1
                else:
                    self.dropped[d.outcome.value] += 1
            if keep:
                out.append(dep)
        return out


__all__ = ["FuseDeploymentFilter", "KeyFor"]
