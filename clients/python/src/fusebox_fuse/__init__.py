"""fusebox's fuse contract for Python gateways.

Follow fusebox's compacted fuse topic, verify each command's HMAC over its
canonical bytes, keep the newest per target by (issued_at, version) until
it expires, and decide per request: the same contract as the Go package
github.com/fusebox-dev/fusebox/fuse, held to it byte for byte by the shared
vectors in fuse/testdata/vectors.

    from fusebox_fuse import Client, Key, keyring_from_env
    from fusebox_fuse.kafka import ConfluentSource

    client = Client(keyring=keyring_from_env(),
                    source=ConfluentSource({"bootstrap.servers": "kafka:9092"}))
    client.start()
    client.wait_ready(30)
    d = client.decide(Key("acme", "chat", "gpt-4o", "canary"))
"""

from .client import APPLIED, DEFAULT_TOPIC, REJECT_REASONS, Client, Decision, Outcome, Record, Source, Stats
from .command import (
    SCHEMA, WILDCARD, CommandError, FuseCommand, Key, Reason, compare_order, decode, format_float,
)
from .keyring import (
    ENV_KEYS, BadSignatureError, FuseError, KeyringError, KeyRetiredError, Keyring, NoKeysError,
    UnknownKeyError, UnsignedError, VerifyError, keyring_from_env, load_keyring_file, parse_keyring,
)
from .keyring import Key as HMACKey

__all__ = [
    "APPLIED", "DEFAULT_TOPIC", "ENV_KEYS", "REJECT_REASONS", "SCHEMA", "WILDCARD",
    "BadSignatureError", "Client", "CommandError", "Decision", "FuseCommand", "FuseError", "HMACKey", "Key",
    "KeyRetiredError", "Keyring", "KeyringError", "NoKeysError", "Outcome", "Reason", "Record", "Source",
    "Stats", "UnknownKeyError", "UnsignedError", "VerifyError", "compare_order", "decode", "format_float",
    "keyring_from_env", "load_keyring_file", "parse_keyring",
]
