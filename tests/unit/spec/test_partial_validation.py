"""Structural and semantic findings together: the semantic checks run on the parts of a spec that parsed.

A structurally bad value is taken out (its default stands in), an unknown key just goes; the validators that read
a section with a bad value do not run, so no finding comes from a default the user never wrote; a bad required
value (a group's name) leaves only the structural findings."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from test_validators import BASE, CASES, _spec

from provision.spec import validators
from provision.spec.loader import validate_file
from provision.spec.model import ClusterSpec
from provision.spec.partial import salvage

HEAD = """\
name: demo
provider: {type: static, subnet: 10.0.0.0/24}
"""
GROUPS = """\
node_groups:
  - {name: head, roles: [controller], hosts: head01, addresses: [10.0.0.10]%s}
  - {name: gpu, roles: [compute], hosts: "gpu[01-02]", addresses: "10.0.0.[11-12]", gpu: {model: %s, count: 8}}
"""


def _rendered(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    result = validate_file(path)
    assert not result.ok
    return [f.render() for f in result.findings]


@pytest.mark.parametrize("text, structural, semantic", [
    (HEAD + GROUPS % (", cnt: 1", "H100-SMX"),  # an unknown key damages nothing
     "node_groups[0].cnt (line 4): unknown key 'cnt'; did you mean 'count'?",
     "node_groups[1].gpu.model (line 5): 'H100-SMX' is not a known GPU model; did you mean 'H100-SXM'?"),
    (HEAD + "ssh: {port: 99999}\n" + GROUPS % ("", "H100-SMX"),  # a bad value in another section
     "ssh.port (line 3): 99999 is not valid",
     "node_groups[1].gpu.model (line 6): 'H100-SMX' is not a known GPU model"),
    (HEAD + GROUPS % ("", "H100-SXM") + "software: {cuda: {versions: ['12.8', 5]}}\n"
     "filesystem: {type: glusterfs, mount_point: /etc}\n",
     "software.cuda.versions[1] (line 6): 5 is not valid",
     "filesystem.mount_point (line 7):"),
])
def test_structural_and_semantic_findings_are_reported_together(tmp_path, text, structural, semantic):
    shown = _rendered(tmp_path, text)
    assert any(line.startswith(f"error: {structural}") for line in shown), shown
    assert any(line.startswith(f"error: {semantic}") for line in shown), shown


def test_a_default_standing_in_for_a_bad_value_gives_no_finding(tmp_path):
    """CUDA 13.0 is too new for the default driver branch, but the spec wrote a (bad) branch of its own: the checks
    that read software do not run, so only the bad branch is reported."""
    shown = _rendered(tmp_path, HEAD + GROUPS % ("", "H100-SXM") +
                      "software: {nvidia_driver: {branch: new}, cuda: {versions: ['13.0']}}\n")
    assert len(shown) == 1 and shown[0].startswith("error: software.nvidia_driver.branch (line 6): 'new' is not valid")


def test_a_bad_required_value_leaves_the_structural_findings_alone(tmp_path):
    shown = _rendered(tmp_path, HEAD + GROUPS.replace("name: head", "name: 'Head Node'") % ("", "H100-SMX"))
    assert len(shown) == 1 and shown[0].startswith("error: node_groups[0].name (line 4):")


def test_salvage_takes_out_only_what_is_bad_and_names_the_damaged_sections():
    data = {**BASE, "ssh": {"port": "x", "user": "admin"}, "extra": 1, "certify": {"level": "quick"}}
    part = salvage(data, _errors(data))
    assert part.damaged == {"ssh"} and part.spec.ssh.port == 22 and part.spec.ssh.user == "admin"
    assert data["ssh"]["port"] == "x"  # the caller's data is left as it was
    bad = {**BASE, "node_groups": "none"}
    assert salvage(bad, _errors(bad)).spec is None


def _errors(data: dict) -> list[dict]:
    with pytest.raises(ValidationError) as caught:
        ClusterSpec.model_validate(data)
    return caught.value.errors(include_url=False)


class _Reads:
    """A spec that records which of its top-level fields a validator reads."""

    def __init__(self, spec: ClusterSpec) -> None:
        self._spec, self.read = spec, set()

    def __getattr__(self, name: str):
        if name in ClusterSpec.model_fields:
            self.read.add(name)
        return getattr(self._spec, name)


@pytest.mark.parametrize("check", validators.VALIDATORS, ids=lambda c: c.__name__)
def test_each_validator_reads_only_the_sections_it_declares(check):
    """READS decides which validators run beside structural errors; a validator reading more than it declares
    could report a default as the user's mistake."""
    read: set[str] = set()
    for _, change, _ in CASES:
        recorder = _Reads(_spec(change))
        check(recorder)
        read |= recorder.read
    assert read <= set(validators.READS[check]), read - set(validators.READS[check])
