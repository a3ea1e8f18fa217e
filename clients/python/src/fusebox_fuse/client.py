"""The gateway's view of the fuse topic: verify, order, expire, decide (fuse/client.go, fuse/decide.go)."""

from __future__ import annotations

import enum
import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Final, Protocol

from .command import WILDCARD, CommandError, FuseCommand, Key, compare_order, decode
from .keyring import Keyring, NoKeysError, VerifyError

DEFAULT_TOPIC: Final = "fusebox.fuse"
"""The fuse topic fusebox writes."""

REJECT_REASONS: Final = ("malformed", "unsigned", "unknown_key", "key_retired", "bad_signature", "duplicate", "stale", "expired")
"""Why a client did not apply a record (fuse.RejectReason)."""

APPLIED: Final = "applied"

REJECT_LOG_INTERVAL: Final = 10.0
"""Seconds between two WARNING lines of one rejection reason; the lines held
back are counted in the next one."""

READY_WARNING_AFTER: Final = 15.0
"""Seconds after run() starts with the client still not ready before it says
so at WARNING (decisions allow every request until it is: fail open)."""

log = logging.getLogger("fusebox_fuse")


class Outcome(enum.Enum):
    """What a gateway does with one request."""

    ALLOW = "allow"
    DEGRADE = "degrade"
    REJECT = "reject"
    THROTTLE = "throttle"
    ROLLBACK = "rollback"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Decision:
    """decide's answer for one request key (fuse.Decision).

    fallback: the model (DEGRADE) or baseline variant (ROLLBACK).
    fraction: the share admitted as asked (THROTTLE), or the probe share
    while the target is half-open (probe True). matched is False when no
    command in effect covers the key (outcome ALLOW); command decided.
    """

    outcome: Outcome = Outcome.ALLOW
    fallback: str = ""
    fraction: float = 0.0
    probe: bool = False
    matched: bool = False
    command: FuseCommand | None = None

    def admit(self, u: float) -> Outcome:
        """Resolves a THROTTLE or probe decision for one request, given a
        uniform sample u in [0, 1): ALLOW when u < fraction, else REJECT for
        THROTTLE and outcome for a probe."""
        if (self.probe or self.outcome is Outcome.THROTTLE) and u < self.fraction:
            return Outcome.ALLOW
        if self.outcome is Outcome.THROTTLE:
            return Outcome.REJECT
        return self.outcome


_ALLOW: Final = Decision()


def _decision(c: FuseCommand) -> Decision | None:
    if c.state == "closed":
        return None
    probe = c.state == "half_open"
    if c.action in ("trip", "half_open"):
        out, fb = Outcome.REJECT, ""
    elif c.action == "degrade":
        out, fb = Outcome.DEGRADE, c.fallback
    elif c.action == "throttle":
        out, fb = Outcome.THROTTLE, ""
    elif c.action == "rollback":
        out, fb = Outcome.ROLLBACK, c.fallback
    else:  # close, scale_out: advisory
        return None
    frac = c.throttle_fraction if probe or out is Outcome.THROTTLE else 0.0
    return Decision(out, fb, frac, probe, True, c)


def _mask_of(t: Key) -> int:
    m = 0
    for i, v in enumerate((t.tenant, t.service, t.model, t.variant)):
        if v != WILDCARD:
            m |= 1 << i
    return m


def _project(k: Key, m: int) -> Key:
    return Key(
        k.tenant if m & 1 else WILDCARD, k.service if m & 2 else WILDCARD,
        k.model if m & 4 else WILDCARD, k.variant if m & 8 else WILDCARD,
    )


_MASKS: Final = tuple(m for n in range(4, -1, -1) for m in range(15, -1, -1) if bin(m).count("1") == n)


def _better(a: FuseCommand, b: FuseCommand) -> bool:
    if a.level != b.level:
        return a.level > b.level
    o = compare_order(a, b)
    if o != 0:
        return o > 0
    for x, y in ((a.target.tenant, b.target.tenant), (a.target.service, b.target.service),
                 (a.target.model, b.target.model), (a.target.variant, b.target.variant)):
        if x != y:
            # Code point order equals Go's byte order of the UTF-8.
            return x < y
    return False


@dataclass
class Record:
    """One record of the fuse topic (value None: a tombstone)."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


class Source(Protocol):
    """Delivers the fuse topic from the start, then follows it (fuse.Source)."""

    def open(self) -> dict[int, int]:
        """Connects, positions every partition at its start, and returns the
        end offset (exclusive) of each partition that holds records now."""
        ...

    def poll(self, timeout: float) -> tuple[list[Record], set[int]]:
        """Records, and the partitions known to be read to their end."""
        ...

    def close(self) -> None: ...


@dataclass
class Stats:
    records: int = 0
    applied: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: {r: 0 for r in REJECT_REASONS})
    source_errors: int = 0
    targets: int = 0
    ready: bool = False


class Client:
    """Follows the fuse topic and keeps, per target, the newest command that
    verified. Build it, call run() (or start() for a daemon thread), then
    decide() from any thread.

    keyring verifies signed commands; insecure_unsigned accepts unsigned
    ones (a fusebox run with --insecure-unsigned). clock returns Unix ns
    (default the wall clock) and judges expiry and key not-after.
    reject_log_interval: seconds between two WARNING lines of one rejection
    reason (default 10; the rest are counted in the next line and in
    stats()). ready_warning_after: seconds after run() starts before a
    client still not ready says so at WARNING (default 15).
    """

    def __init__(self, *, keyring: Keyring | None = None, insecure_unsigned: bool = False,
                 source: Source | None = None, clock: Callable[[], int] = time.time_ns,
                 logger: logging.Logger | None = None, reject_log_interval: float = REJECT_LOG_INTERVAL,
                 ready_warning_after: float = READY_WARNING_AFTER) -> None:
        if keyring is None and not insecure_unsigned:
            raise NoKeysError("fuse: no keys: give keyring=, or insecure_unsigned=True to accept unsigned commands")
        self._ring = keyring
        self._insecure = insecure_unsigned
        self._source = source
        self._clock = clock
        self._log = logger or log
        self._lock = threading.RLock()
        self._state: dict[Key, FuseCommand] = {}
        self._masks = [0] * 16
        self._handlers: list[Callable[[FuseCommand | None, FuseCommand], None]] = []
        self._stats = Stats()
        self._pending: dict[int, int] = {}
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reject_log_interval = reject_log_interval
        self._ready_warning_after = ready_warning_after
        self._reject_logged: dict[str, tuple[float, int]] = {}  # reason -> (monotonic s of last line, held back)
        self._last_source_error = ""

    # --- applying records --------------------------------------------------

    def handle(self, value: bytes | None, now_unix_nano: int | None = None) -> str:
        """Verifies and applies one record value; returns "applied" or the
        rejection reason (REJECT_REASONS). Called by run for every record;
        public so that a gateway with its own consumer can feed it."""
        now = self._clock() if now_unix_nano is None else now_unix_nano
        result = self._handle(value, now)
        with self._lock:
            self._stats.records += 1
            if result == APPLIED:
                self._stats.applied += 1
            else:
                self._stats.rejected[result] += 1
        return result

    def _handle(self, value: bytes | None, now: int) -> str:
        if value is None:
            return self._reject("malformed", None, "tombstone (fusebox never writes one)")
        try:
            cmd = decode(value)
        except CommandError as e:
            return self._reject("malformed", None, str(e))
        if cmd.key_id == "" and cmd.signature == "" and self._insecure:
            pass
        elif self._ring is None:
            return self._reject("unknown_key", cmd, "signed command but no keyring")
        else:
            try:
                self._ring.verify(cmd, now)
            except VerifyError as e:
                return self._reject(e.reason, cmd, str(e))
            except CommandError as e:
                return self._reject("bad_signature", cmd, str(e))
        with self._lock:
            old = self._state.get(cmd.target)
            had = old is not None
            held_counts = old is not None and now < old.expires_at_unix_nano
            o = compare_order(cmd, old)
            if had and o == 0:
                return self._reject("duplicate", cmd, "")
            if now >= cmd.expires_at_unix_nano:
                return self._reject("expired", cmd, "")
            if held_counts and o < 0:
                return self._reject("stale", cmd, "")
            self._state[cmd.target] = cmd
            if not had:
                self._masks[_mask_of(cmd.target)] += 1
            handlers = list(self._handlers)
        for h in handlers:
            h(old, cmd)
        return APPLIED

    def _reject(self, reason: str, cmd: FuseCommand | None, err: str) -> str:
        # A duplicate is a record read again (a restart, a re-sent command):
        # normal. An expired command is normal while the topic is replayed at
        # start (compaction keeps old commands) but not once the client
        # follows it (or is fed by handle() without a source): a command
        # expired on arrival means fusebox's clock and this one disagree, or
        # the consumer is far behind.
        quiet = reason == "duplicate" or (reason == "expired" and self._source is not None and not self._ready.is_set())
        level = logging.DEBUG if quiet else logging.WARNING
        if not self._log.isEnabledFor(level):
            return reason
        held = 0
        if level == logging.WARNING:
            now = time.monotonic()
            with self._lock:
                last, held = self._reject_logged.get(reason, (-1e18, 0))
                if now - last < self._reject_log_interval:
                    self._reject_logged[reason] = (last, held + 1)
                    return reason
                self._reject_logged[reason] = (now, 0)
        where = f" target={cmd.target} version={cmd.version} key_id={cmd.key_id}" if cmd else ""
        if reason == "expired" and cmd is not None:
            skew = (self._clock() - cmd.expires_at_unix_nano) / 1e9
            where += f" expired {skew:.1f}s ago by this clock (issued_at={cmd.issued_at_unix_nano}; check clock skew)"
        more = f" ({held} more rejected for this reason in the last {self._reject_log_interval:.0f}s)" if held else ""
        self._log.log(level, "fuse: command rejected reason=%s%s%s%s", reason, where, f" error={err}" if err else "", more)
        return reason

    def on_change(self, fn: Callable[[FuseCommand | None, FuseCommand], None]) -> None:
        """fn(old, new) after each applied command, on the run thread."""
        with self._lock:
            self._handlers.append(fn)

    # --- queries -----------------------------------------------------------

    def decide(self, key: Key, now_unix_nano: int | None = None) -> Decision:
        """What to do with a request for key (a full request key).

        Among the commands in effect whose target matches key (unexpired at
        now, not closed, not advisory) the most specific target wins, then the
        highest level, then the latest (issued-at, version), then the smallest
        target. With none: ALLOW, matched False (fail open)."""
        now = self._clock() if now_unix_nano is None else now_unix_nano
        best: Decision | None = None
        best_spec = -1
        with self._lock:
            for m in _MASKS:
                if self._masks[m] == 0:
                    continue
                spec = bin(m).count("1")
                if spec < best_spec:
                    break
                cmd = self._state.get(_project(key, m))
                if cmd is None or now >= cmd.expires_at_unix_nano:
                    continue
                d = _decision(cmd)
                if d is None:
                    continue
                if best is None or (best.command is not None and _better(cmd, best.command)):
                    best, best_spec = d, spec
        return best if best is not None else _ALLOW

    def state(self, target: Key, now_unix_nano: int | None = None) -> FuseCommand | None:
        """The newest applied command of exactly this target, None when none or expired."""
        now = self._clock() if now_unix_nano is None else now_unix_nano
        with self._lock:
            c = self._state.get(target)
        return c if c is not None and now < c.expires_at_unix_nano else None

    def snapshot(self, now_unix_nano: int | None = None) -> list[FuseCommand]:
        now = self._clock() if now_unix_nano is None else now_unix_nano
        with self._lock:
            out = [c for c in self._state.values() if now < c.expires_at_unix_nano]
        return sorted(out, key=lambda c: str(c.target))

    def stats(self) -> Stats:
        with self._lock:
            s = Stats(self._stats.records, self._stats.applied, dict(self._stats.rejected),
                      self._stats.source_errors, len(self._state), self._ready.is_set())
        return s

    # --- following the topic -----------------------------------------------

    @property
    def ready(self) -> bool:
        """True once the topic was read up to the end offsets seen at open."""
        return self._ready.is_set()

    def wait_ready(self, timeout: float | None = None) -> bool:
        return self._ready.wait(timeout)

    def run(self) -> None:
        """Opens the source (retrying with back-off), rebuilds the state from
        the start of the topic, marks ready at the end offsets seen at open,
        then follows until stop(). Closes the source on return."""
        src = self._source
        if src is None:
            raise ValueError("fuse: no source (give source=, e.g. fusebox_fuse.kafka.ConfluentSource)")
        backoff = 1.0
        started = time.monotonic()
        warned = False
        try:
            while not self._stop.is_set():
                try:
                    self._pending = dict(src.open())
                    break
                except Exception as e:  # noqa: BLE001 - any open failure is retried
                    with self._lock:
                        self._stats.source_errors += 1
                    self._last_source_error = str(e)
                    warned = warned or self._warn_not_ready(started)
                    self._log.warning("fuse: opening the source failed; retrying in %.0fs: %s", backoff, e)
                    if self._stop.wait(backoff):
                        return
                    backoff = min(2 * backoff, 30.0)
            self._check_ready()
            while not self._stop.is_set():
                try:
                    recs, at_end = src.poll(0.2)
                except Exception as e:  # noqa: BLE001 - logged, counted, retried
                    with self._lock:
                        self._stats.source_errors += 1
                    self._last_source_error = str(e)
                    self._log.warning("fuse: reading the fuse topic failed: %s", e)
                    warned = warned or self._warn_not_ready(started)
                    self._stop.wait(0.2)
                    continue
                for r in recs:
                    self.handle(r.value)
                    end = self._pending.get(r.partition)
                    if end is not None and r.offset >= end - 1:
                        del self._pending[r.partition]
                for p in at_end:
                    self._pending.pop(p, None)
                self._check_ready()
                warned = warned or self._warn_not_ready(started)
        finally:
            src.close()

    def _warn_not_ready(self, started: float) -> bool:
        """One WARNING when the client is still not ready ready_warning_after
        seconds after run() began; True once said (or ready)."""
        if self._ready.is_set():
            return True
        waited = time.monotonic() - started
        if waited < self._ready_warning_after:
            return False
        with self._lock:
            errors = self._stats.source_errors
        last = f"; last error: {self._last_source_error}" if self._last_source_error else ""
        self._log.warning("fuse: not ready after %.0fs (the fuse topic is not read to its end; %d source errors%s): "
                          "every request is allowed until it is (fail open)", waited, errors, last)
        return True

    def _check_ready(self) -> None:
        if not self._pending and not self._ready.is_set():
            with self._lock:
                self._stats.ready = True
            self._ready.set()

    def start(self) -> threading.Thread:
        """run() on a daemon thread."""
        t = threading.Thread(target=self.run, name="fusebox-fuse", daemon=True)
        self._thread = t
        t.start()
        return t

    def stop(self, timeout: float | None = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)


__all__ = ["APPLIED", "DEFAULT_TOPIC", "READY_WARNING_AFTER", "REJECT_LOG_INTERVAL",
           "REJECT_REASONS", "Client", "Decision", "Outcome", "Record", "Source", "Stats"]
