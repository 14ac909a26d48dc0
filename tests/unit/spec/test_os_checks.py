"""The node OS a spec declares: supported releases only, one Slurm series per cluster, one release per sandbox."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.spec.loader import validate_file
from provision.spec.os_checks import check_os

STATIC = """\
name: mix
provider: {{type: static}}
node_groups:
  - {{name: ctl, roles: [controller], hosts: ctl01, addresses: 10.0.0.1, os: {ctl}}}
  - {{name: gpu, roles: [compute], hosts: "gpu[01-02]", addresses: "10.0.0.[2-3]", os: {gpu}}}
software: {{slurm: {{source: {source}}}}}
"""
SANDBOX = """\
name: box
provider: {{type: sandbox, subnet: 10.96.0.0/24{os}}}
node_groups:
  - {{name: ctl, roles: [controller], count: 1}}
  - {{name: node, roles: [compute], count: 2{group_os}}}
"""


@pytest.fixture(autouse=True)
def _spec_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)


def validate_text(text: str):
    path = Path("cluster.yaml")
    path.write_text(text)
    return validate_file(path)


def _errors(text: str) -> list[tuple[str, str]]:
    return [(f.path, f.message) for f in validate_text(text).findings if f.level == "error"]


def test_releases_that_ship_different_slurm_majors_are_refused_with_both_named():
    errors = _errors(STATIC.format(ctl="debian-12", gpu="debian-13", source="distribution"))
    assert len(errors) == 1
    path, message = errors[0]
    assert path == "node_groups[1].os"
    assert "debian-12: Slurm 22.05" in message and "debian-13: Slurm 24.11" in message


@pytest.mark.parametrize("release", ["debian-13", "debian-12"])
def test_one_series_passes(release):
    assert _errors(STATIC.format(ctl=release, gpu=release, source="distribution")) == []


def test_a_site_build_of_slurm_may_span_releases():
    spec = validate_text(STATIC.format(ctl="debian-12", gpu="debian-13", source="distribution")).spec
    site = spec.software.slurm.model_copy(update={"source": "repository"})
    spec = spec.model_copy(update={"software": spec.software.model_copy(update={"slurm": site})})
    assert check_os(spec) == []


def test_an_unsupported_release_is_named_with_the_supported_ones():
    [(path, message)] = _errors(STATIC.format(ctl="debian-13", gpu="rocky-9.4", source="distribution"))
    assert path == "node_groups[1].os" and "'rocky-9.4' is not a supported OS" in message


def test_a_sandbox_group_cannot_ask_for_another_release_than_the_provider_builds():
    errors = _errors(SANDBOX.format(os=", os: debian-13", group_os=", os: debian-12"))
    assert ("node_groups[1].os" in {p for p, _ in errors}
            and any("sandbox nodes all run provider.os (debian-13)" in m for _, m in errors))
    assert _errors(SANDBOX.format(os=", os: debian-12", group_os=", os: debian-12")) == []


def test_the_sandbox_builds_only_the_debian_releases_it_knows():
    result = validate_text(SANDBOX.format(os=", os: debian-11", group_os=""))
    assert [f.path for f in result.findings if f.level == "error"] == ["provider.os"]
