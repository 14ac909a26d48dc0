"""EFA network-interface layouts per instance type, and the instance type table."""
from __future__ import annotations

import pytest

from provision.certify.probe.gpus import GPU_MODELS
from provision.providers.aws.facts import TypeFacts
from provision.providers.aws.instance_types import GPU_INSTANCE_TYPES, is_cpu_only, quota_class
from provision.providers.aws.instances import network_interfaces

BOTH = ("interface", "efa", "efa-only")


def _facts(cards: int, efa: int, kinds=BOTH) -> TypeFacts:
    return TypeFacts(name="x.y", vcpus=8, efa_supported=efa > 0, max_efa=efa,
                     cards=tuple((i, kinds) for i in range(cards)), cluster_placement=True, architectures=("x86_64",))


def _shape(layout):
    return [(n.get("NetworkCardIndex"), n["DeviceIndex"], n.get("InterfaceType")) for n in layout]


def test_p5_gets_an_ena_primary_and_32_efa_only_interfaces_one_per_card():
    layout = network_interfaces(_facts(32, 32), True, "subnet-1", "sg-1", public_ip=True)
    assert _shape(layout) == [(0, 0, "interface"), (0, 1, "efa-only")] + [(c, 0, "efa-only") for c in range(1, 32)]
    assert all("AssociatePublicIpAddress" not in n for n in layout)  # AWS refuses it with several interfaces
    assert all(n["DeleteOnTermination"] and n["Groups"] == ["sg-1"] for n in layout)


def test_p4d_gets_four_efa_interfaces_on_four_cards():
    assert _shape(network_interfaces(_facts(4, 4), True, "s", "g", public_ip=False)) == [
        (0, 0, "interface"), (0, 1, "efa-only"), (1, 0, "efa-only"), (2, 0, "efa-only"), (3, 0, "efa-only")]


def test_p5en_uses_as_many_cards_as_it_has_efa_interfaces():
    layout = network_interfaces(_facts(16, 16), True, "s", "g", public_ip=False)
    assert sum(n.get("InterfaceType") == "efa-only" for n in layout) == 16 and len(layout) == 17


def test_a_single_efa_type_keeps_one_interface_and_its_public_address():
    assert network_interfaces(_facts(1, 1), True, "s", "g", public_ip=True) == [
        {"SubnetId": "s", "Groups": ["g"], "DeleteOnTermination": True, "NetworkCardIndex": 0, "DeviceIndex": 0,
         "InterfaceType": "efa", "AssociatePublicIpAddress": True}]


def test_cards_without_efa_only_get_the_older_efa_layout():
    assert _shape(network_interfaces(_facts(4, 4, kinds=("interface", "efa")), True, "s", "g", public_ip=False)) == [
        (0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]


def test_no_efa_means_one_plain_interface():
    assert _shape(network_interfaces(_facts(32, 32), False, "s", "g", public_ip=True)) == [(None, 0, None)]


def test_every_table_entry_names_a_known_gpu_model():
    assert {t.gpu_model for t in GPU_INSTANCE_TYPES.values()} <= set(GPU_MODELS)
    assert GPU_INSTANCE_TYPES["p5.48xlarge"].efa_interfaces == 32
    assert GPU_INSTANCE_TYPES["p4d.24xlarge"].gpu_model == "A100-SXM-40GB"
    assert GPU_INSTANCE_TYPES["p4de.24xlarge"].gpu_model == "A100-SXM-80GB"
    assert GPU_INSTANCE_TYPES["p5en.48xlarge"].gpu_model == "H200-SXM"


@pytest.mark.parametrize("itype, cls, cpu_only", [
    ("p5.48xlarge", "P", False), ("p4de.24xlarge", "P", False), ("g6e.xlarge", "G", False),
    ("vt1.3xlarge", "G", False), ("m7i.2xlarge", "Standard", True), ("c6i.xlarge", "Standard", True),
    ("inf2.xlarge", "Inf", False), ("trn1.32xlarge", "Trn", False), ("x2idn.16xlarge", "X", True),
])
def test_quota_class_and_cpu_only(itype, cls, cpu_only):
    assert quota_class(itype) == cls
    assert is_cpu_only(itype) is cpu_only
