"""Xid events from genuine kernel log samples, and the node verdict they give."""
from __future__ import annotations

import pytest

from provision.certify import xid


def events(fixtures_dir, name):
    return xid.parse_xids((fixtures_dir / name).read_text())


def test_dmesg_ctime_lines(fixtures_dir):
    found = events(fixtures_dir, "xid_dmesg_ctime.txt")
    assert [e.code for e in found] == [13, 13, 13, 109]
    assert {e.pci for e in found} == {"0000:cb:00"}
    assert found[3].message.startswith("pid=1797828, name=pt_main_thread")


def test_application_xids_warn(fixtures_dir):
    result = xid.evaluate(events(fixtures_dir, "xid_dmesg_ctime.txt"), "gpu01")
    assert result.verdict == "warn" and result.value == 4 and "Xid 13" in result.detail


def test_journal_lines_and_causes_named_in_xid_45(fixtures_dir):
    found = events(fixtures_dir, "xid_journal_kernel.txt")
    assert sorted({e.code for e in found}) == [45, 145, 149]
    assert {e.pci for e in found if e.code == 149} == {"0000:dc:00"}
    assert xid.evaluate(found, "gpu01").verdict == "fail"  # NVLink errors behind the cleanups


def test_fallen_off_the_bus_without_xid_counts_as_79(fixtures_dir):
    found = events(fixtures_dir, "xid_fallen_off_bus.txt")
    assert [(e.code, e.pci) for e in found] == [(79, "0000:b3:00"), (79, "0000:44:00")]
    result = xid.evaluate(found, "gpu01", gpu_by_pci={"00000000:B3:00.0": 5})
    assert result.verdict == "fail" and "gpu5 (0000:b3:00)" in result.detail


def test_old_driver_format_without_pci_prefix(fixtures_dir):
    found = events(fixtures_dir, "xid_old_driver_format.txt")
    assert [e.code for e in found] == [16, 16, 8] and found[0].pci == "0000:01:00"


def test_no_xid_passes():
    assert xid.evaluate([], "gpu01").verdict == "pass"


@pytest.mark.parametrize("code, verdict", [(48, "fail"), (79, "fail"), (95, "fail"), (119, "fail"), (74, "fail"),
                                           (13, "warn"), (31, "warn"), (43, "warn"), (9999, "warn")])
def test_classification(code, verdict):
    assert xid.classify(code)[0] == verdict


@pytest.mark.parametrize("address, expected", [("00000000:1B:00.0", "0000:1b:00"), ("0000:cb:00", "0000:cb:00"),
                                               ("0000:b3:00.0", "0000:b3:00")])
def test_pci_addresses_from_nvml_and_kernel_log_match(address, expected):
    assert xid.normalise_pci(address) == expected


def test_unreadable_log_warns_with_reason():
    result = xid.unreadable("gpu01", "dmesg: Operation not permitted")
    assert result.verdict == "warn" and "Operation not permitted" in result.detail


# Blackwell NVLink Xids (144-150) name the unit and a severity after the code.
NONFATAL_145 = ("NVRM: Xid (PCI:0000:b9:00): 145, RLW, nonfatal, cross-contain=0, injected=0, Link 3 "
                "(0x00000004 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")


def test_nonfatal_nvlink_xid_warns_as_corrected():
    result = xid.evaluate(xid.parse_xids(NONFATAL_145), "gpu01")
    assert result.verdict == "warn" and "nonfatal (corrected by the link)" in result.detail


def test_fatal_nvlink_xid_beside_a_nonfatal_one_fails_and_both_are_listed():
    fatal = NONFATAL_145.replace("nonfatal", "fatal")
    result = xid.evaluate(xid.parse_xids(f"{NONFATAL_145}\n{fatal}\n{NONFATAL_145}"), "gpu01")
    assert result.verdict == "fail" and result.value == 3
    assert "x2: NVLink error, nonfatal" in result.detail and "x1: NVLink error" in result.detail


def test_nonfatal_only_softens_nvlink_codes():
    assert xid.classify_event(xid.XidEvent(48, "0000:01:00", "nonfatal"))[0] == "fail"
