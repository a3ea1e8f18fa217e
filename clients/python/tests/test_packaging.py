"""The package's metadata: what an sdist or wheel carries."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parents[1]


def test_license_is_the_repositorys() -> None:
    # pyproject's license-files can name only files under clients/python, so
    # LICENSE is a copy of the repository's; the two must not drift apart.
    if not (ROOT / "go.mod").is_file():
        pytest.skip("not in the fusebox repository (an unpacked sdist)")
    assert (HERE / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()


def test_runtime_dependency_is_a_range() -> None:
    # A gateway installs the client next to its own Kafka client: the runtime
    # requirement is a range; the exact pins are the tests' (requirements-test.txt).
    project = tomllib.loads((HERE / "pyproject.toml").read_text())["project"]
    assert project["dependencies"] == ["confluent-kafka>=2.6,<3"]
    assert project["readme"] == "README.md" and (HERE / project["readme"]).is_file()
    assert project["license"] == "Apache-2.0"
    pins = (HERE / "requirements-test.txt").read_text().splitlines()
    assert any(p.startswith("confluent-kafka==") for p in pins)
