"""Xid events from genuine kernel log samples, judged by NVIDIA's Xid catalogue with the action it calls for."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from provision.certify.probe import xid
from provision.certify.probe.health import xid_catalog as catalog
from provision.certify.probe.records import CheckResult

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus" / "xid"
SIDECARS = sorted(CORPUS.glob("*.yml"))


def events(fixtures_dir, name):
    return xid.parse_xids((fixtures_dir / name).read_text())


def _sample(sidecar: Path) -> tuple[dict, str]:
    meta = yaml.safe_load(sidecar.read_text())
    text_file = (sidecar.parent / meta["sample"]) if "sample" in meta else sidecar.with_suffix(".txt")
    return meta, text_file.read_text()


def test_the_corpus_holds_real_samples_with_their_sources():
    assert len(SIDECARS) >= 9
    for sidecar in SIDECARS:
        meta, text = _sample(sidecar)
        assert meta["url"].startswith("https://") and "NVRM" in text, sidecar.name


@pytest.mark.parametrize("sidecar", SIDECARS, ids=lambda p: p.stem)
def test_every_corpus_sample_parses_to_what_was_read_by_eye(sidecar):
    meta, text = _sample(sidecar)
    want = meta["read_by_eye"]
    found = xid.parse_xids(text)
    assert [(e.code, e.pci, e.gpu_instance) for e in found] == \
        [(e["code"], e["pci"], e.get("gpu_instance")) for e in want["events"]]
    result = xid.evaluate(found, "n1")
    assert (result.verdict, result.action) == (want["verdict"], want["action"]), result.detail


def test_dmesg_ctime_lines(fixtures_dir):
    found = events(fixtures_dir, "xid_dmesg_ctime.txt")
    assert found[3].message.startswith("pid=1797828, name=pt_main_thread")


def test_xid_109_follows_the_catalogue_and_calls_for_a_gpu_reset(fixtures_dir):
    """The catalogue files 109 (context switch timeout) under RESET_GPU; it used to warn as an application error."""
    result = xid.evaluate(events(fixtures_dir, "xid_dmesg_ctime.txt"), "gpu01")
    assert result.verdict == "fail" and result.action == "reset_gpu" and result.value == 4
    assert "Xid 13 on 0000:cb:00 x3: graphics engine exception -> restart_app" in result.detail
    assert "Xid 109 on 0000:cb:00 x1: context switch timeout -> reset_gpu" in result.detail


def test_fallen_off_the_bus_names_the_gpu_index(fixtures_dir):
    result = xid.evaluate(events(fixtures_dir, "xid_fallen_off_bus.txt"), "gpu01", gpu_by_pci={"00000000:B3:00.0": 5})
    assert result.verdict == "fail" and "gpu5 (0000:b3:00)" in result.detail and result.action == "reboot"


def test_no_xid_passes_without_an_action():
    result = xid.evaluate([], "gpu01")
    assert result.verdict == "pass" and result.action is None


@pytest.mark.parametrize("line, expected", [
    ("NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User Channel", ("0000:01:00", 94, 5, None)),
    ("NVRM: Xid (PCI:0000:3b:00 GPU-I:01 GPU-CI:02): 13, pid=9, name=a, Graphics Exception", ("0000:3b:00", 13, 1, 2)),
    ("NVRM: Xid (PCI:0000:01:00 GPU-I:12): 48, pid=1, DBE (double bit error)", ("0000:01:00", 48, 12, None)),
    ("NVRM: Xid (PCI:0009:01:00): 79, GPU has fallen off the bus.", ("0009:01:00", 79, None, None)),
])
def test_mig_instances_are_read_instead_of_dropping_the_line(line, expected):
    (event,) = xid.parse_xids(line)
    assert (event.pci, event.code, event.gpu_instance, event.compute_instance) == expected


@pytest.mark.parametrize("code", [48, 79, 95])
def test_a_mig_xid_alone_fails_the_node(code):
    result = xid.evaluate(xid.parse_xids(f"NVRM: Xid (PCI:0000:01:00 GPU-I:05): {code}, pid=1, x"), "n1")
    assert result.verdict == "fail"


# Catalogue rows the issue named, and the verdicts that changed with them (see the README table).
@pytest.mark.parametrize("code, verdict, action", [
    (46, "fail", "reset_gpu"), (110, "fail", "reset_gpu"), (136, "fail", "reset_gpu"), (143, "fail", "reset_gpu"),
    (155, "fail", "reset_gpu"), (156, "fail", "reset_gpu"), (158, "fail", "reset_gpu"), (109, "fail", "reset_gpu"),
    (92, "pass", "none"), (121, "pass", "none"), (63, "pass", "none"), (43, "pass", "none"),
    (61, "warn", "contact_support"), (62, "fail", "reset_gpu"), (64, "fail", "reset_gpu"),
    (48, "fail", "workflow_xid_48"), (74, "fail", "workflow_nvlink_err"), (79, "fail", "reboot"),
    (95, "fail", "reset_gpu"), (119, "fail", "reset_gpu"), (120, "fail", "reset_gpu"), (140, "fail", "reset_gpu"),
    (13, "warn", "restart_app"), (31, "warn", "restart_app"), (94, "warn", "restart_app"),
    (45, "warn", "workflow_xid_45"), (54, "fail", "check_mechanicals"), (151, "fail", "restart_vm"),
    (78, "fail", "update_sw"), (159, "warn", "check_uvm"), (9999, "warn", "contact_support"),
])
def test_catalogue_verdict_and_action(code, verdict, action):
    result = xid.evaluate([xid.XidEvent(code, "0000:01:00", "")], "n1")
    assert (result.verdict, result.action) == (verdict, action)
    assert xid.classify(code)[0] == (verdict if code != 154 else "warn")


def test_catalogue_is_complete_and_every_bucket_has_an_action():
    assert set(catalog.ENTRIES) == set(range(1, 163))
    assert {e.bucket for e in catalog.ENTRIES.values()} <= set(catalog.BUCKETS) | {catalog.XID_154}
    assert all(verdict in ("pass", "warn", "fail") for _, verdict in catalog.BUCKETS.values())
    assert set(xid.ACTION_ORDER) >= {a for a, _ in catalog.BUCKETS.values()} | \
        {a for a, _ in catalog.RECOVERY_ACTIONS.values()} | {"see_message"}


@pytest.mark.parametrize("message, verdict, action", [
    ("GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", "fail", "reset_gpu"),
    ("GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)", "fail", "reboot"),
    ("GPU recovery action changed from 0x0 (None) to 0x2 (OS Reboot)", "fail", "reboot"),
    ("GPU recovery action changed from 0x0 (None) to 0x1 (PF FLR)", "fail", "reset_gpu"),
    ("GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)", "fail", "drain_and_reset"),
    ("GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)", "pass", "none"),
    ("something the driver may print one day", "warn", "see_message"),
])
def test_xid_154_takes_its_action_from_the_message(message, verdict, action):
    result = xid.evaluate(xid.parse_xids(f"NVRM: Xid (PCI:0000:2a:00): 154, {message}"), "n1")
    assert (result.verdict, result.action) == (verdict, action)


def test_the_latest_xid_154_of_a_gpu_holds():
    log = ("NVRM: Xid (PCI:0000:2a:00): 120, GSP kernel exception: load access page fault (cause:0xd)\n"
           "NVRM: Xid (PCI:0000:2a:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n"
           "NVRM: Xid (PCI:0000:2a:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)\n")
    result = xid.evaluate(xid.parse_xids(log), "n1")
    assert result.value == 3 and "Xid 154 on 0000:2a:00 x1: GPU recovery action changed to none" in result.detail
    assert result.verdict == "fail" and result.action == "reset_gpu"  # the Xid 120 itself still calls for a reset


def test_node_action_is_the_most_far_reaching_of_the_worst_findings():
    log = ("NVRM: Xid (PCI:0000:01:00): 95, pid=1, Uncontained: LTC TAG (0x2,0x0)\n"
           "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.\n"
           "NVRM: Xid (PCI:0000:03:00): 13, Graphics Exception\n")
    result = xid.evaluate(xid.parse_xids(log), "n1")
    assert result.verdict == "fail" and result.action == "reboot"
    assert "-> reset_gpu" in result.detail and "-> restart_app" in result.detail


def test_action_travels_through_the_probe_document():
    result = xid.evaluate([xid.XidEvent(79, "0000:01:00", "")], "n1")
    assert CheckResult.from_dict(result.to_dict()).action == "reboot"
    assert CheckResult.from_dict({k: v for k, v in result.to_dict().items() if k != "action"}).action is None


@pytest.mark.parametrize("address, expected", [("00000000:1B:00.0", "0000:1b:00"), ("0000:cb:00", "0000:cb:00"),
                                               ("0000:b3:00.0", "0000:b3:00")])
def test_pci_addresses_from_nvml_and_kernel_log_match(address, expected):
    assert xid.normalise_pci(address) == expected


def test_unreadable_log_warns_with_reason():
    result = xid.unreadable("gpu01", "dmesg: Operation not permitted")
    assert result.verdict == "warn" and "Operation not permitted" in result.detail


# Blackwell NVLink Xids (144-150) name the unit and a severity after the code. The catalogue files the whole range
# under WORKFLOW_NVLINK5_ERR; a nonfatal one (corrected by the link) keeps warning, as verified before.
NONFATAL_145 = ("NVRM: Xid (PCI:0000:b9:00): 145, RLW, nonfatal, cross-contain=0, injected=0, Link 3 "
                "(0x00000004 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")


def test_nonfatal_nvlink_xid_warns_as_corrected():
    result = xid.evaluate(xid.parse_xids(NONFATAL_145), "gpu01")
    assert result.verdict == "warn" and "nonfatal (corrected by the link)" in result.detail


def test_fatal_nvlink_xid_beside_a_nonfatal_one_fails_and_both_are_listed():
    fatal = NONFATAL_145.replace("nonfatal", "fatal")
    result = xid.evaluate(xid.parse_xids(f"{NONFATAL_145}\n{fatal}\n{NONFATAL_145}"), "gpu01")
    assert result.verdict == "fail" and result.value == 3 and result.action == "workflow_nvlink5_err"
    assert "x2: NVLink error, nonfatal" in result.detail and "x1: NVLink error" in result.detail


def test_nonfatal_only_softens_nvlink_codes():
    assert xid.classify_event(xid.XidEvent(48, "0000:01:00", "nonfatal"))[0] == "fail"
