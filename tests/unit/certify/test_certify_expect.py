"""NodeExpectation: derived from the spec on the driving machine, validated on the node."""
from __future__ import annotations

import pytest

from provision.certify.control.session import expectation_for
from provision.certify.probe.expect import NodeExpectation
from provision.records import NodeInfo
from provision.spec.model import ClusterSpec

SPEC = {
    "name": "c1",
    "provider": {"type": "static"},
    "node_groups": [{"name": "gpu", "roles": ["compute"], "count": 2,
                     "gpu": {"model": "H100-SXM", "count": 8},
                     "interconnect": {"type": "infiniband", "nics": 8}}],
    "software": {"nvidia_driver": {"branch": 570}, "cuda": {"versions": ["12.4", "12.8"], "default": "12.4"}},
    "filesystem": {"type": "nfs", "mount_point": "/shared", "server": "nfs01", "remote_path": "/export"},
}
NODE = NodeInfo(name="gpu01", group="gpu", roles=("compute",), gpu_model="H100-SXM", gpu_count=8,
                interconnect="infiniband", interconnect_nics=8)


def test_for_node_takes_the_newest_cuda_and_the_shared_mount():
    expect = expectation_for(NODE, ClusterSpec.model_validate(SPEC), run_id="r1")
    assert (expect.node, expect.gpu_model, expect.gpu_count) == ("gpu01", "H100-SXM", 8)
    assert expect.driver_branch == 570 and expect.driver_version is None and expect.cuda_version == "12.8"
    assert (expect.interconnect, expect.interconnect_nics) == ("infiniband", 8)
    assert expect.fs_mount == "/shared" and expect.run_id == "r1"


def test_for_node_without_shared_filesystem_has_no_mount():
    spec = ClusterSpec.model_validate({**SPEC, "filesystem": {"type": "none"}})
    assert expectation_for(NODE, spec).fs_mount is None


def test_round_trip_through_json_dict():
    expect = expectation_for(NODE, ClusterSpec.model_validate(SPEC))
    assert NodeExpectation.from_dict(expect.to_dict()) == expect


@pytest.mark.parametrize("data, message", [
    ({"gpu_count": 8}, "expectation.node: missing"),
    ({"node": "n", "gpu_count": "8"}, "expectation.gpu_count: '8' is not of type int"),
    ({"node": "n", "gpu_count": True}, "expectation.gpu_count: True is not of type int"),
    ({"node": "n", "mig": "no"}, "expectation.mig: 'no' is not of type bool"),
    ({"node": "n", "gpu_count": None}, "expectation.gpu_count: null is not allowed"),
    ({"node": "n", "nics": 8}, "expectation.nics: unknown key"),
    ([1, 2], "expected a JSON object"),
])
def test_from_dict_names_the_bad_field(data, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        NodeExpectation.from_dict(data)
