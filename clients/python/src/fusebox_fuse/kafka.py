"""The fuse topic through confluent-kafka (librdkafka): fuse.KgoSource's behaviour.

Every partition is assigned (no consumer group, nothing committed) and read
from its earliest offset; the end offsets at open are the last stable
offsets (read_committed, as the Go client), so the client is ready once it
has read what fusebox had committed when it started. Partitions added later
are picked up within ``metadata_interval`` seconds.

librdkafka's own log (connection failures while the broker is down, ~20
lines a second) goes to the Python logger ``fusebox_fuse.kafka`` instead of
stderr, each distinct message at most once per ``log_interval`` seconds
(repeats counted in the next line), unless the caller's config has a
``logger`` of its own.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from typing import Any, Final

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]  # exported, not listed in __all__

from .client import DEFAULT_TOPIC, Record

_OFFSET_BEGINNING: Final = -2  # librdkafka's RD_KAFKA_OFFSET_BEGINNING

# Configuration keys only a consumer understands: set by the source, refused
# from the caller (they would change what the source reads).
_OWNED: Final = ("group.id", "enable.auto.commit", "auto.offset.reset", "enable.partition.eof", "isolation.level")

LOGGER_NAME: Final = "fusebox_fuse.kafka"
DEFAULT_LOG_INTERVAL: Final = 10.0  # seconds between two lines of the same librdkafka message


class RdkafkaLog:
    """librdkafka's log as Python logging (confluent-kafka's ``logger``
    setting calls ``log(level, fmt, *args)``): each distinct message at most
    once per ``interval`` seconds, the repeats it held back counted on the
    next line, so a broker outage is a WARNING/ERROR every ``interval``, not a
    flood on stderr."""

    def __init__(self, logger: logging.Logger | None = None, interval: float = DEFAULT_LOG_INTERVAL,
                 clock: Any = time.monotonic) -> None:
        self.logger = logger or logging.getLogger(LOGGER_NAME)
        self.interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, tuple[float, int]] = {}  # message -> (last emitted, held back since)

    def log(self, level: int, msg: str, *args: Any) -> None:
        text = msg % args if args else msg
        now = self._clock()
        with self._lock:
            last, held = self._last.get(text, (-1e18, 0))
            if now - last < self.interval:
                self._last[text] = (last, held + 1)
                return
            self._last[text] = (now, 0)
            if len(self._last) > 1024:  # messages carry no unbounded ids, but stay bounded anyway
                self._last = {text: (now, 0)}
        if held:
            text += f" ({held} more like it in the last {self.interval:.0f}s)"
        self.logger.log(level, "librdkafka: %s", text)


class ConfluentSource:
    """A fusebox_fuse.Source on confluent-kafka.

    config is librdkafka client configuration: bootstrap.servers and any
    security settings (security.protocol, sasl.*, ssl.*). The consumer
    settings the source depends on (group.id, auto commit, offset reset,
    partition EOF, isolation level) are its own.
    """

    def __init__(self, config: dict[str, Any], topic: str = DEFAULT_TOPIC, *,
                 timeout: float = 10.0, metadata_interval: float = 2.0,
                 log_interval: float = DEFAULT_LOG_INTERVAL) -> None:
        bad = [k for k in config if k in _OWNED]
        if bad:
            raise ValueError(f"fuse: ConfluentSource sets {', '.join(bad)} itself")
        if not topic:
            raise ValueError("fuse: empty topic")
        self._config = dict(config)
        # librdkafka writes its log to stderr unless given a logger: route it
        # into Python logging (one shared limiter for the consumer and admin).
        self._config.setdefault("logger", RdkafkaLog(interval=log_interval))
        self._topic = topic
        self._timeout = timeout
        self._metadata_interval = metadata_interval
        self._consumer: Consumer | None = None
        self._assigned: set[int] = set()
        self._next_metadata = 0.0

    def open(self) -> dict[int, int]:
        self.close()
        consumer = Consumer({
            **self._config,
            "group.id": "fusebox-fuse-" + uuid.uuid4().hex,  # never joined, never committed
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        })
        try:
            parts = self._partitions(consumer)
            pending: dict[int, int] = {}
            if parts:
                admin = AdminClient(self._config)
                tps = [TopicPartition(self._topic, p) for p in parts]
                starts = self._offsets(admin, tps, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
                ends = self._offsets(admin, tps, OffsetSpec.latest())  # type: ignore[no-untyped-call]
                pending = {p: ends[p] for p in parts if ends[p] > starts[p]}
            consumer.assign([TopicPartition(self._topic, p, _OFFSET_BEGINNING) for p in parts])
        except BaseException:
            consumer.close()
            raise
        self._consumer = consumer
        self._assigned = set(parts)
        self._next_metadata = time.monotonic() + self._metadata_interval
        return pending

    def _partitions(self, consumer: Consumer) -> list[int]:
        md = consumer.list_topics(self._topic, timeout=self._timeout)
        t = md.topics.get(self._topic)
        if t is None or t.error is not None:
            if t is not None and t.error is not None and t.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise KafkaException(t.error)
            return []  # the topic does not exist yet: empty
        return sorted(t.partitions)

    def _offsets(self, admin: AdminClient, tps: list[TopicPartition], spec: OffsetSpec) -> dict[int, int]:
        futs = admin.list_offsets({tp: spec for tp in tps}, isolation_level=IsolationLevel.READ_COMMITTED,
                                  request_timeout=self._timeout)
        return {tp.partition: f.result().offset for tp, f in futs.items()}

    def poll(self, timeout: float) -> tuple[list[Record], set[int]]:
        c = self._consumer
        if c is None:
            raise RuntimeError("fuse: source closed")
        if time.monotonic() >= self._next_metadata:
            self._next_metadata = time.monotonic() + self._metadata_interval
            new = [p for p in self._partitions(c) if p not in self._assigned]
            if new:
                c.incremental_assign([TopicPartition(self._topic, p, _OFFSET_BEGINNING) for p in new])
                self._assigned.update(new)
        recs: list[Record] = []
        at_end: set[int] = set()
        first_err: KafkaError | None = None
        for m in c.consume(num_messages=500, timeout=timeout):
            err = m.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    p = m.partition()
                    if p is not None:
                        at_end.add(p)
                elif first_err is None:
                    first_err = err
                continue
            p, off = m.partition(), m.offset()
            if p is None or off is None:
                continue
            recs.append(Record(p, off, m.key(), m.value()))
        if first_err is not None and (not recs or first_err.fatal()):
            raise KafkaException(first_err)
        return recs, at_end

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


__all__ = ["DEFAULT_LOG_INTERVAL", "LOGGER_NAME", "ConfluentSource", "RdkafkaLog"]
