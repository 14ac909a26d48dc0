"""requirements.lock: it covers every dependency pyproject.toml names, within its ranges, and is what .venv holds."""
from __future__ import annotations

import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import newest_deps  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = project["project"]["dependencies"] + project["project"]["optional-dependencies"]["test"]
    names += project["build-system"]["requires"]
    return [Requirement(text) for text in names]


def _locked_here() -> dict[str, str]:
    return newest_deps.locked_versions(LOCK)


def test_every_declared_dependency_is_locked_within_its_range():
    locked = _locked_here()
    for requirement in _declared():
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": "test"}):
            continue
        name = newest_deps._normal(requirement.name)
        assert name in locked, f"{requirement.name} is in pyproject.toml but not in requirements.lock: run `make lock`"
        assert requirement.specifier.contains(locked[name], prereleases=True), \
            f"requirements.lock has {name}=={locked[name]}, outside {requirement}: run `make lock`"


def test_every_locked_package_carries_hashes():
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK.read_text().split("\n", 2)[2])
    for block in blocks:
        if block.strip() and not block.startswith("#"):
            assert "--hash=sha256:" in block, f"no hash for {block.splitlines()[0]}"


@pytest.mark.skipif(Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
                    reason="not the project's .venv (e.g. `make newest`'s scratch venv, which is not from the lock)")
def test_the_venv_holds_exactly_the_locked_versions():
    """What `make venv` installed is what the lock says (a stale .venv or a pip run by hand shows here)."""
    locked = _locked_here()
    wrong = {}
    for name, version in locked.items():
        try:
            have = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            have = None
        if have != version:
            wrong[name] = (version, have)
    assert not wrong, f"locked vs installed: {wrong}; rebuild with `rm -rf .venv && make venv`"


def test_drift_lists_only_what_differs():
    rows = newest_deps.drift({"a": "1", "b": "2", "pip": "23"}, {"a": "1", "b": "3", "c": "1", "pip": "25"})
    assert [row.split() for row in rows] == [["b", "2", "->", "3"], ["c", "-", "->", "1"]]
