"""A litellm Router adapter: fusebox's decisions steer the Router's choice of deployment.

    import litellm
    from fusebox_fuse.litellm_router import FuseDeploymentFilter
    router = litellm.Router(model_list=[...], fallbacks=[{"gpt-4o": ["gpt-4o-mini"]}])
    fuse = FuseDeploymentFilter(client, tenant="acme", service="chat")
    fuse.install(router)

``install`` wraps the Router's entry points (completion, acompletion,
embedding, aembedding, text_completion, atext_completion, responses,
aresponses: the sync and async paths, plain and streamed) so every request
is decided before the Router picks, and registers the filter as a litellm
callback (its ``async_filter_deployments`` decides the requests that reach
the Router some other way, on the async path only: litellm 1.110.2 runs
deployment filters on the async path only). ``uninstall`` undoes both.

Per request, with one uniform sample u in [0, 1) (drawn once, kept across
the Router's retries and fallbacks), each deployment's key (tenant, service,
model, variant) is decided, group by group:

- nothing in effect: the deployment stays a candidate (label ``pass``);
- trip, degrade, rollback, a throttle of fraction 0: dropped (``reject``,
  ``degrade``, ``rollback``, ``throttle``);
- half-open and throttle: the fractional deployments of a group own
  consecutive slices of [0, 1) (by deployment id), and a request whose u
  falls in one's slice goes to that deployment alone (``probe``, ``admit``);
  any other request is kept off all of them (``reject`` for a half-open,
  ``throttle``). A half-open's slice is its probe share f of the group's
  requests (the Router's shuffle among n deployments does not divide it by
  n); a throttle's is f x 1/n, f of its even share among the n deployments
  not dropped: as fusebox's Go gateway admits f of the target's requests
  and rejects the rest, a throttle only sheds load. The slice's deployment
  is the only candidate for all of the Router's retries, on purpose: the Go
  gateway answers a probe with its target's response, failed or not, and
  fusebox judges recovery on it; the Router's fallbacks= to other groups
  still apply.

The dropped deployments reach the Router as its own ``_excluded_deployment_ids``
narrowing, which litellm 1.110.2's sync and async paths, retries and
fallback hops all honour. When a group has nothing left:

- a degrade whose ``fallback`` model the Router knows: the request is sent
  to that model instead (its deployments decided as well);
- else the call's own ``fallbacks=`` for the group when it passes some
  (litellm's per-request override), else the Router's;
- else :class:`CircuitOpenError` (status 503, code ``circuit_open``; 429 and
  ``rate_limit_exceeded`` for a throttle), never litellm's
  "No deployments available" rate-limit error.

Keys: the tenant and service from the request's ``metadata`` ("tenant",
"service") over the filter's defaults; the model from the deployment's
``model_info["fusebox_model"]``, else its ``model_name`` (the group the
caller asks for); the variant from ``model_info["variant"]`` (default "").
``install`` checks the mapping: a deployment without ``fusebox_model``, and
deployments that share a key (one command would trip them together), are a
WARNING naming them. It also warns, at install and on every applied command,
when every deployment of a group is refused and nothing can take its
requests (no known degrade fallback, no Router fallback).

Needs litellm (not a dependency of fusebox-fuse: the ``[litellm]`` extra
pins the tested 1.110.2).
"""

from __future__ import annotations

import collections
import functools
import inspect
import itertools
import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from litellm.integrations.custom_logger import CustomLogger

from .asgi import PHI, Decider, fnv1a64
from .client import Decision, Outcome
from .command import Key

log = logging.getLogger("fusebox_fuse.litellm")

_MAX_DRAWN: Final = 4096  # requests whose sample is remembered (one Router attempt chain each)
_MAX_LOGGED: Final = 4096  # (deployment, command) pairs whose drop was logged
_MAX_WARNED: Final = 1024  # check_fallbacks problems remembered as logged (oldest forgotten first)
SAMPLE_KEY: Final = "fusebox_sample"
"""The request metadata member holding the request's sample (set by install's wrappers)."""
PLANNED_KEY: Final = "fusebox_planned"
"""The request metadata member naming the filter (its ``token``) whose
install wrapper decided the request (counted there): litellm.callbacks is
process-wide, so every installed filter's async filter sees every Router's
requests, and passes those another filter planned through untouched."""
EXCLUDED_KEY: Final = "_excluded_deployment_ids"
"""litellm 1.110.2's request narrowing: deployment ids no attempt of the request may use."""
ENTRY_POINTS: Final = ("completion", "acompletion", "embedding", "aembedding", "text_completion",
                       "atext_completion", "responses", "aresponses")
"""The Router methods install wraps (those the Router has)."""
MODEL_POSITION: Final[Mapping[str, int | None]] = {
    "completion": 0, "acompletion": 0, "embedding": 0, "aembedding": 0, "text_completion": 0,
    "atext_completion": 0, "responses": None, "aresponses": 1}
"""Where litellm 1.110.2's entry points take model among their positional
arguments ((model, messages), (model, input), (model, prompt); aresponses
(input, model); responses takes none): a positional call keeps its shape."""
DEFAULT_METRIC_NAME: Final = "fusebox_litellm_deployment_decisions_total"
DECISIONS: Final = ("pass", "probe", "admit", "reject", "throttle", "degrade", "rollback", "yielded")
"""What a request's decision did with one deployment of the requested group:
pass (no command), probe / admit (the request is in its half-open / throttle
slice: sent to it alone), reject / throttle / degrade / rollback (dropped by
that command), yielded (kept off it because another deployment's probe or
admitted slice took the request)."""

TESTED_LITELLM: Final = "1.110.2"
"""The litellm release whose Router internals (registry(), settings(), the
_excluded_deployment_ids narrowing) the adapter is tested against."""

KeyFor = Callable[[Mapping[str, Any], Mapping[str, Any]], Key]
"""(deployment, request_kwargs) -> the key fusebox judges."""


class CircuitOpenError(Exception):
    """Every deployment that could take the request is refused by fuse
    commands, and neither a degrade's fallback nor the Router's fallbacks
    remain. status_code 503 / code "circuit_open" (429 /
    "rate_limit_exceeded" when a throttle refused it); retry_after in whole
    seconds until the deciding command expires (at least 1)."""

    def __init__(self, message: str, *, model: str, decision: Decision, status_code: int, code: str,
                 retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.model = model
        self.decision = decision
        self.status_code = status_code
        self.code = code
        self.retry_after = retry_after


class DeploymentCounters:
    """Decisions per deployment, thread-safe; render() is the Prometheus text
    format (``fusebox_litellm_deployment_decisions_total{model_group,
    deployment, decision}``), as fusehttp's request counter is."""

    def __init__(self, name: str = DEFAULT_METRIC_NAME) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._n: collections.Counter[tuple[str, str, str]] = collections.Counter()

    def count(self, group: str, deployment: str, decision: str) -> None:
        with self._lock:
            self._n[(group, deployment, decision)] += 1

    def get(self, group: str, deployment: str, decision: str) -> int:
        with self._lock:
            return self._n[(group, deployment, decision)]

    def snapshot(self) -> dict[tuple[str, str, str], int]:
        with self._lock:
            return dict(self._n)

    def render(self) -> str:
        lines = [f"# HELP {self.name} Router requests decided by fusebox's fuse filter, per deployment of the "
                 "requested model group and decision.", f"# TYPE {self.name} counter"]
        for (g, d, dec), v in sorted(self.snapshot().items()):
            lines.append(f'{self.name}{{model_group="{_esc(g)}",deployment="{_esc(d)}",decision="{dec}"}} {v}')
        return "\n".join(lines) + "\n"


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


@dataclass
class GroupChoice:
    """One group's decision for one request: the deployment ids still
    candidates, those dropped, the label per deployment, and the decision
    that refused the group when none is left (else None)."""

    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    decisions: dict[str, Decision] = field(default_factory=dict)
    refused: Decision | None = None


def _dep_id(dep: Mapping[str, Any]) -> str:
    return str((dep.get("model_info") or {}).get("id") or "")


def _label(d: Decision) -> str:
    if d.probe:
        return "reject" if d.outcome is Outcome.REJECT else d.outcome.value
    return d.outcome.value


class FuseDeploymentFilter(CustomLogger):
    """Steers a litellm Router by fusebox's commands; see the module doc.

    decider: a fusebox_fuse.Client (or anything with decide(Key)).
    tenant, service, variant: the key's defaults when the request's metadata
    and the deployment's model_info name none. key_for replaces the keying;
    sampler returns a request's sample in [0, 1) (default: FNV-1a of
    metadata["request_id"], else n*phi mod 1). metrics: decisions per
    deployment (a DeploymentCounters is made when None: ``self.metrics``).
    clock: Unix ns, for Retry-After.
    """

    def __init__(self, decider: Decider, *, tenant: str = "", service: str = "", variant: str = "",
                 key_for: KeyFor | None = None, sampler: Callable[[Mapping[str, Any]], float] | None = None,
                 metrics: DeploymentCounters | None = None, clock: Callable[[], int] | None = None) -> None:
        super().__init__()
        self.decider = decider
        self.tenant, self.service, self.variant = tenant, service, variant
        self.key_for = key_for or self._default_key
        self._custom_key = key_for is not None
        self.sampler = sampler
        self.metrics = metrics if metrics is not None else DeploymentCounters()
        self._clock = clock
        self._seq = itertools.count(1)
        self._drawn: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._logged: collections.OrderedDict[tuple[str, str, int, str], None] = collections.OrderedDict()
        self._warned: collections.OrderedDict[str, None] = collections.OrderedDict()  # under _lock: on_change
        # runs check_fallbacks on the client's thread while requests run on others
        self._lock = threading.Lock()
        self._router: Any = None
        self._originals: dict[str, tuple[Callable[..., Any], bool]] = {}  # name -> (method, in the instance dict)
        self._settings_failed = False  # logged once
        self.token = uuid.uuid4().hex
        """This filter's mark on the requests it planned (metadata[PLANNED_KEY])."""
        self.kept = 0
        self.dropped: dict[str, int] = {o.value: 0 for o in Outcome}

    # --- keys and samples --------------------------------------------------

    def _default_key(self, deployment: Mapping[str, Any], request: Mapping[str, Any]) -> Key:
        md = request.get("metadata") or {}
        info = deployment.get("model_info") or {}
        model = info.get("fusebox_model") or deployment.get("model_name") or ""
        return Key(str(md.get("tenant", self.tenant)), str(md.get("service", self.service)), str(model),
                   str(info.get("variant", self.variant)))

    def sample(self, request: Mapping[str, Any]) -> float:
        """The request's uniform sample in [0, 1): the one install's wrapper
        drew (metadata["fusebox_sample"]), else the sampler's, else the
        FNV-1a hash of metadata["request_id"], else the next n*phi mod 1,
        drawn once per request (litellm_trace_id): the Router filters again
        for a retry or a fallback group, and must not redraw."""
        md = request.get("metadata") or {}
        got = md.get(SAMPLE_KEY)
        if isinstance(got, float) and 0.0 <= got < 1.0:
            return got
        if self.sampler is not None:
            u = self.sampler(request)
            return 0.0 if not (u >= 0) else min(u, math.nextafter(1.0, 0.0))
        rid = md.get("request_id")
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
        """Whether the deployment, judged alone, admits the request with sample u, and why."""
        d = self.decider.decide(self.key_for(deployment, request))
        return (not d.matched or d.admit(u) is Outcome.ALLOW), d

    # --- one group, one request --------------------------------------------

    def choose(self, deployments: Sequence[Mapping[str, Any]], request: Mapping[str, Any], u: float) -> GroupChoice:
        """The group's decision for a request with sample u (see the module
        doc): the fractional deployments own consecutive slices of [0, 1) in
        deployment id order."""
        ch = GroupChoice()
        free: list[str] = []
        frac: list[tuple[str, Decision]] = []
        for dep in deployments:
            i = _dep_id(dep)
            d = self.decider.decide(self.key_for(dep, request))
            ch.decisions[i] = d
            if not d.matched:
                free.append(i)
            elif (d.probe or d.outcome is Outcome.THROTTLE) and d.fraction > 0:
                frac.append((i, d))
            else:
                ch.dropped.append(i)
                ch.labels[i] = _label(d)
        lo = 0.0
        chosen = ""
        n = len(free) + len(frac)  # the deployments the Router would share the group's requests among
        for i, d in sorted(frac, key=lambda t: t[0]):
            width = d.fraction if d.probe else d.fraction / n
            if chosen == "" and lo <= u < lo + width:
                chosen = i
            lo += width
        if chosen:
            ch.kept = [chosen]
            ch.labels[chosen] = "probe" if ch.decisions[chosen].probe else "admit"
            for i in free:
                ch.dropped.append(i)
                ch.labels[i] = "yielded"
            for i, d in frac:
                if i != chosen:
                    ch.dropped.append(i)
                    ch.labels[i] = "yielded"
        else:
            ch.kept = free
            for i in free:
                ch.labels[i] = "pass"
            for i, d in frac:
                ch.dropped.append(i)
                ch.labels[i] = _label(d)
        if not ch.kept and ch.decisions:
            refusing = [ch.decisions[i] for i in ch.dropped if ch.decisions[i].matched]
            ch.refused = refusing[0] if refusing else None
        return ch

    def _note(self, group: str, ch: GroupChoice) -> None:
        """Counts the group's labels; logs each (deployment, command) drop once at INFO."""
        for i, lab in ch.labels.items():
            self.metrics.count(group, i, lab)
            d = ch.decisions.get(i)
            if lab in ("pass", "yielded") or d is None or d.command is None:
                continue
            sig = (i, str(d.command.target), d.command.version, lab)
            with self._lock:
                if sig in self._logged:
                    continue
                self._logged[sig] = None
                while len(self._logged) > _MAX_LOGGED:
                    self._logged.popitem(last=False)
            if lab in ("probe", "admit"):
                log.info("fuse: deployment %r of %r takes %.0f%% of the group's requests (%s, command target=%s "
                         "version=%d)", i, group, 100 * d.fraction, "half-open probe" if d.probe else "throttle",
                         d.command.target, d.command.version)
            else:
                log.info("fuse: deployment %r of %r dropped: %s (command target=%s action=%s state=%s version=%d)",
                         i, group, lab, d.command.target, d.command.action, d.command.state, d.command.version)
        with self._lock:
            self.kept += len(ch.kept)
            for i in ch.dropped:
                if ch.decisions[i].matched:
                    self.dropped[ch.decisions[i].outcome.value] += 1

    # --- the Router ---------------------------------------------------------

    def install(self, router: Any) -> Any:
        """Wraps router's entry points (ENTRY_POINTS it has), registers this
        filter in litellm.callbacks, checks the deployment-to-key mapping and
        the fallbacks (WARNINGs naming what is wrong), and follows the
        decider's commands (on_change) to check the fallbacks again. Returns
        router."""
        import litellm

        check_router(router)
        self._router = router
        for name in ENTRY_POINTS:
            orig = getattr(router, name, None)
            if orig is None:
                continue
            owner = getattr(orig, "__fusebox_wrapped__", None)
            if owner is self:
                continue
            if owner is not None:
                raise ValueError(f"fuse: Router.{name} is already steered by another FuseDeploymentFilter")
            self._originals[name] = (orig, name in getattr(router, "__dict__", {}))
            setattr(router, name, self._wrap(name, orig))
        if self not in litellm.callbacks:
            litellm.callbacks.append(self)
        self.check_mapping()
        self.check_fallbacks()
        on_change = getattr(self.decider, "on_change", None)
        if callable(on_change):
            on_change(lambda _old, _new: self.check_fallbacks())
        return router

    def uninstall(self) -> None:
        """Undoes install: the Router's entry points are its own again and
        the filter leaves litellm.callbacks (it decides nothing more; the
        decider's on_change, which has no removal, finds no Router to check)."""
        import litellm

        router, self._router = self._router, None
        for name, (orig, own) in self._originals.items():
            if router is not None and getattr(getattr(router, name, None), "__fusebox_wrapped__", None) is self:
                if own:
                    setattr(router, name, orig)
                else:
                    delattr(router, name)
        self._originals.clear()
        while self in litellm.callbacks:
            litellm.callbacks.remove(self)

    def _deployments(self) -> list[Mapping[str, Any]]:
        got = self._router.registry().deployments() if self._router is not None else []
        return list(got or [])

    def _groups(self) -> dict[str, list[Mapping[str, Any]]]:
        out: dict[str, list[Mapping[str, Any]]] = {}
        for dep in self._deployments():
            out.setdefault(str(dep.get("model_name") or ""), []).append(dep)
        return out

    def _router_fallbacks(self, group: str, call: Mapping[str, Any] | None = None) -> list[str]:
        """The fallback groups for group: the call's own fallbacks= when it
        passes some (litellm's per-request override), else the Router's."""
        if call is not None and call.get("fallbacks") is not None:
            return _fallbacks_for(call.get("fallbacks"), group)
        try:
            fbs = self._router.settings().fallbacks or []
        except Exception:  # noqa: BLE001 - install checked settings(): logged, and no fallbacks known
            if not self._settings_failed:
                self._settings_failed = True
                log.exception("fuse: the Router's settings().fallbacks failed (litellm %s, tested with %s): "
                              "its fallbacks are taken as none, refused groups fail with CircuitOpenError",
                              _litellm_version(), TESTED_LITELLM)
            return []
        return _fallbacks_for(fbs, group)

    def _hops(self, group: str, call: Mapping[str, Any]) -> list[str]:
        """The groups the Router may send a request for group to: its
        fallbacks (the call's, else the Router's), and the Router's context
        window and content policy fallbacks (the call's when it passes them)."""
        out = self._router_fallbacks(group, call)
        for name in ("context_window_fallbacks", "content_policy_fallbacks"):
            if call.get(name) is not None:
                out += _fallbacks_for(call.get(name), group)
                continue
            try:
                out += _fallbacks_for(getattr(self._router.settings(), name, None), group)
            except Exception:  # noqa: BLE001 - _router_fallbacks logged settings() failing
                pass
        return out

    def check_mapping(self) -> list[str]:
        """WARNINGs (returned too) for deployments keyed implicitly (no
        model_info["fusebox_model"]) and for deployments sharing one key."""
        problems: list[str] = []
        by_key: dict[Key, list[str]] = {}
        for dep in self._deployments():
            i = _dep_id(dep)
            info = dep.get("model_info") or {}
            key = self.key_for(dep, {})
            by_key.setdefault(key, []).append(i)
            if not self._custom_key and not info.get("fusebox_model"):
                problems.append(
                    f"deployment {i!r} of model group {dep.get('model_name')!r} "
                    f"(litellm model {(dep.get('litellm_params') or {}).get('model')!r}) has no "
                    f"model_info['fusebox_model']: keyed as model {key.model!r}; commands for any other model "
                    "name never apply to it (set fusebox_model to the model fusebox's keys carry)")
        for key, ids in by_key.items():
            if len(ids) > 1:
                problems.append(
                    f"deployments {', '.join(repr(i) for i in ids)} share the key {key}: one command trips them "
                    "together and none can be steered alone (give each a distinct model_info['variant'])")
        for p in problems:
            log.warning("fuse: %s", p)
        return problems

    def check_fallbacks(self) -> list[str]:
        """WARNINGs (returned too) for groups whose every deployment is
        refused now (for the filter's default tenant and service) with nothing
        to take their requests: no degrade fallback the Router knows and no
        Router fallback; and for degrade fallbacks the Router does not know.
        Each problem is logged once (the last _MAX_WARNED, 1,024, are
        remembered: an older one that comes back is logged again)."""
        if self._router is None:
            return []
        groups = self._groups()
        problems: list[str] = []
        for g, deps in groups.items():
            ch = self.choose(deps, {}, 0.999999)  # the refused share: above every probe and throttle slice
            if ch.kept or ch.refused is None:
                continue
            fb = self._degrade_fallback(ch)
            d = ch.refused
            what = f"{d.command.action} target={d.command.target} version={d.command.version}" if d.command else "?"
            if d.fallback and d.outcome is Outcome.DEGRADE and d.fallback not in groups:
                problems.append(f"model group {g!r}: the degrade ({what}) names fallback {d.fallback!r}, which this "
                                "Router does not know: the Router's own fallbacks decide")
            if fb is None and not self._router_fallbacks(g):
                problems.append(f"model group {g!r}: every deployment is refused by fuse commands ({what}) and no "
                                "fallback can take its requests (no degrade fallback the Router knows, no Router "
                                "fallbacks=): they fail with CircuitOpenError")
        with self._lock:
            new = [p for p in problems if p not in self._warned]
            for p in new:
                self._warned[p] = None
            while len(self._warned) > _MAX_WARNED:
                self._warned.popitem(last=False)
        for p in new:
            log.warning("fuse: %s", p)
        return problems

    def _degrade_fallback(self, ch: GroupChoice, names: Collection[str] | None = None) -> str | None:
        """The fallback model of a degrade that dropped the group, when the
        Router knows it (names: the Router's groups, read when None)."""
        if names is None:
            names = {str(dep.get("model_name") or "") for dep in self._deployments()}
        for i in ch.dropped:
            d = ch.decisions[i]
            if d.matched and d.outcome is Outcome.DEGRADE and d.fallback and d.fallback in names:
                return d.fallback
        return None

    def plan(self, model: str, kwargs: dict[str, Any]) -> tuple[str, dict[str, Any], GroupChoice | None]:
        """Decides one request to model: returns the model to call (a
        degrade's fallback when the group is refused), the kwargs with the
        sample in metadata and the refused deployments excluded, and the
        requested group's choice (None when the Router has no such group).
        Only the groups the request can reach are decided: the requested
        one, a degrade's fallback, and the groups the call's or the Router's
        fallbacks= (and context window and content policy fallbacks) hop to
        from them, transitively; the Router's deployments are read once."""
        md = dict(kwargs.get("metadata") or {})
        probe_req = {**kwargs, "metadata": md}
        u = self.sample(probe_req)
        md[SAMPLE_KEY] = u
        md[PLANNED_KEY] = self.token
        request = {**kwargs, "metadata": md}
        groups = self._groups()
        excluded = [str(x) for x in (kwargs.get(EXCLUDED_KEY) or [])]
        choices: dict[str, GroupChoice] = {}

        def decide(g: str) -> GroupChoice | None:
            if g not in choices and g in groups:
                choices[g] = self.choose(groups[g], request, u)
            return choices.get(g)

        target = model
        asked = decide(model)
        if asked is not None:
            self._note(model, asked)
            if not asked.kept:
                fb = self._degrade_fallback(asked, groups)
                if fb is not None and fb != model:
                    target = fb
                    self._note(fb, decide(fb) or GroupChoice())
        todo, seen = [model, target], set()
        while todo:
            g = todo.pop()
            if g in seen:
                continue
            seen.add(g)
            decide(g)
            todo += self._hops(g, kwargs)
        for ch in choices.values():
            excluded += ch.dropped
        out = {**kwargs, "metadata": md}
        if excluded:
            out[EXCLUDED_KEY] = list(dict.fromkeys(excluded))
        final = choices.get(target)
        return target, out, final

    def _refusal(self, model: str, ch: GroupChoice) -> CircuitOpenError:
        d = ch.refused or Decision()
        now = self._clock() if self._clock is not None else time.time_ns()
        exp = d.command.expires_at_unix_nano if d.command else now
        retry = max(1, -(-(exp - now) // 10**9))
        throttled = d.outcome is Outcome.THROTTLE
        what = (f"{d.command.action} (state {d.command.state}, target {d.command.target}, version "
                f"{d.command.version})" if d.command else "a fuse command")
        msg = (f"fusebox: circuit open for model {model!r}: every deployment is refused by {what} and no fallback "
               f"can take the request; retry after {retry}s")
        return CircuitOpenError(msg, model=model, decision=d, status_code=429 if throttled else 503,
                                code="rate_limit_exceeded" if throttled else "circuit_open", retry_after=retry)

    def _prepare(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[
            tuple[Any, ...], dict[str, Any], str, GroupChoice | None]:
        """The call's arguments with the model decided, in litellm's calling
        signature: the model goes back where the caller put it (keyword, or
        its position among the positional arguments: MODEL_POSITION); a
        model that is not a str (or none) is passed through undecided."""
        pos = MODEL_POSITION.get(name)
        if "model" in kwargs:
            model: Any = kwargs["model"]
        elif pos is not None and len(args) > pos:
            model = args[pos]
        else:
            return args, kwargs, "", None
        if not isinstance(model, str):
            return args, kwargs, "", None
        target, kw, ch = self.plan(model, kwargs)
        if "model" in kwargs or pos is None:
            kw["model"] = target
        else:
            args = args[:pos] + (target,) + args[pos + 1:]
        if ch is not None and not ch.kept and not self._router_fallbacks(target, kw):
            raise self._refusal(target, ch)
        return args, kw, target, ch

    def _wrap(self, name: str, orig: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(orig):
            @functools.wraps(orig)
            async def awrapped(*args: Any, **kwargs: Any) -> Any:
                rest, kw, target, ch = self._prepare(name, args, kwargs)
                try:
                    return await orig(*rest, **kw)
                except Exception as e:
                    if ch is not None and not ch.kept and _no_deployments(e):
                        raise self._refusal(target, ch) from e
                    raise
            setattr(awrapped, "__fusebox_wrapped__", self)
            return awrapped

        @functools.wraps(orig)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            rest, kw, target, ch = self._prepare(name, args, kwargs)
            try:
                return orig(*rest, **kw)
            except Exception as e:
                if ch is not None and not ch.kept and _no_deployments(e):
                    raise self._refusal(target, ch) from e
                raise
        setattr(wrapped, "__fusebox_wrapped__", self)
        return wrapped

    # --- litellm's async deployment filter ----------------------------------

    async def async_filter_deployments(self, model: str, healthy_deployments: list[Any], messages: Any,
                                       request_kwargs: dict[str, Any] | None = None,
                                       parent_otel_span: Any = None) -> list[Any]:
        """The async filter: the same choice over the Router's candidates
        (for a request install's wrapper decided, again with its sample: it
        drops nothing the exclusions have not; counted only when unplanned).
        litellm.callbacks is process-wide: a request another filter planned,
        and an unplanned one whose candidates are not all deployments of
        this filter's Router (another Router's), pass untouched."""
        request = request_kwargs or {}
        planned = (request.get("metadata") or {}).get(PLANNED_KEY)
        if planned is not None and planned != self.token:
            return healthy_deployments
        if planned is None:
            if self._router is None:
                return healthy_deployments
            ours = {_dep_id(d) for d in self._deployments() if str(d.get("model_name") or "") == model}
            if not ours or any(_dep_id(d) not in ours for d in healthy_deployments):
                return healthy_deployments
        ch = self.choose(healthy_deployments, request, self.sample(request))
        if planned is None:
            self._note(model, ch)
        keep = set(ch.kept)
        return [dep for dep in healthy_deployments if _dep_id(dep) in keep]


def _litellm_version() -> str:
    try:
        from importlib.metadata import version
        return version("litellm")
    except Exception:  # noqa: BLE001 - for messages only
        return "unknown"


def check_router(router: Any) -> None:
    """Raises RuntimeError naming what is missing when router lacks the
    litellm internals the adapter uses (registry().deployments(),
    settings().fallbacks, and litellm's _excluded_deployment_ids narrowing,
    read by litellm.litellm_core_utils.routing_common_utils); logs a WARNING
    when litellm is not the tested release but has them all."""
    missing: list[str] = []
    reg = getattr(router, "registry", None)
    if not callable(reg) or not callable(getattr(reg(), "deployments", None)):
        missing.append("Router.registry().deployments()")
    st = getattr(router, "settings", None)
    if not callable(st) or not hasattr(st(), "fallbacks"):
        missing.append("Router.settings().fallbacks")
    try:
        from litellm.litellm_core_utils import routing_common_utils
        narrows = callable(getattr(routing_common_utils, "as_excluded_deployment_ids", None))
    except ImportError:
        narrows = False
    if not narrows:
        missing.append(f"the {EXCLUDED_KEY} request narrowing (litellm.litellm_core_utils.routing_common_utils."
                       "as_excluded_deployment_ids)")
    got = _litellm_version()
    if missing:
        raise RuntimeError(f"fuse: this litellm ({got}) lacks what FuseDeploymentFilter steers the Router with: "
                           f"{'; '.join(missing)}; it is tested with litellm {TESTED_LITELLM} "
                           f"(pip install 'fusebox-fuse[litellm]')")
    if got != TESTED_LITELLM:
        log.warning("fuse: litellm %s is not the tested %s: the Router internals the filter uses are present, "
                    "but untested", got, TESTED_LITELLM)


def _fallbacks_for(fbs: Any, group: str) -> list[str]:
    """The groups a litellm fallbacks list ([{group: [...]}, {"*": [...]}],
    or plain group names, which apply to any group) names for group."""
    out: list[str] = []
    for item in fbs if isinstance(fbs, list) else []:
        if isinstance(item, Mapping):
            for k, v in item.items():
                if k in (group, "*"):
                    out += [str(x) for x in (v if isinstance(v, list) else [v])]
        elif isinstance(item, str):
            out.append(item)
    return out


def _no_deployments(e: BaseException) -> bool:
    """litellm's "No deployments available" (RouterRateLimitError), also at the end of a fallback chain."""
    seen: set[int] = set()
    x: BaseException | None = e
    while x is not None and id(x) not in seen:
        seen.add(id(x))
        if type(x).__name__ == "RouterRateLimitError" or "No deployments available" in str(x):
            return True
        x = x.__cause__ or x.__context__
    return False


__all__ = ["DECISIONS", "DEFAULT_METRIC_NAME", "ENTRY_POINTS", "TESTED_LITELLM", "CircuitOpenError",
           "DeploymentCounters", "FuseDeploymentFilter", "GroupChoice", "KeyFor", "check_router"]
