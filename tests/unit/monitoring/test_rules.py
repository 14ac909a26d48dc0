"""The monitoring role's alert rules: promtool accepts them and passes their unit tests (tests/unit/monitoring/rules),
every alert rule has a case that fires it and one where it stays silent, every series name is the catalogue's, and
the lists the rules hold (Xid codes, drain reasons) agree with the code that owns them."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from monitoring_files import RULE_TESTS, RULES
from promql_names import metric_names

from provision.certify.control.slurm_checks import drain_reason
from provision.certify.probe.health import state as gpu_state, xid_catalog
from provision.certify.probe.metrics import catalogue
from provision.certify.probe.nodehealth import reason as health_reason
from provision.cluster import rolling
from provision.slurm import admin

RULE_FILES = sorted(RULES.glob("*.rules.yml"))
TEST_FILES = sorted(RULE_TESTS.glob("*.test.yml"))


def rules() -> list[dict]:
    """Every rule of every rule file."""
    return [rule for path in RULE_FILES for group in yaml.safe_load(path.read_text())["groups"]
            for rule in group["rules"]]


def alerts() -> list[dict]:
    return [rule for rule in rules() if "alert" in rule]


def alert_tests() -> list[dict]:
    """Every alert_rule_test entry of every promtool test file."""
    return [case for path in TEST_FILES for test in yaml.safe_load(path.read_text())["tests"]
            for case in test.get("alert_rule_test", [])]


def rule_id(rule: dict) -> str:
    extra = {k: v for k, v in rule.get("labels", {}).items() if k != "severity"}
    return rule.get("alert", rule.get("record", "")) + (f"{extra}" if extra else "")


def test_there_are_rule_files_and_tests():
    assert RULE_FILES and TEST_FILES


def test_promtool_accepts_the_rule_files(promtool):
    done = subprocess.run([promtool, "check", "rules", *RULE_FILES], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_rule_tests_pass(promtool):
    done = subprocess.run([promtool, "test", "rules", *TEST_FILES], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: p.name)
def test_each_test_file_loads_the_rule_files(path):
    named = {(path.parent / name).resolve() for name in yaml.safe_load(path.read_text())["rule_files"]}
    assert named == {p.resolve() for p in RULE_FILES}


@pytest.mark.parametrize("rule", alerts(), ids=rule_id)
def test_each_alert_rule_has_a_case_that_fires_it(rule):
    """A case whose expected alerts carry the rule's labels (a rule of an alert shared by several, such as
    SlurmNodeDrained's drained_by, needs its own)."""
    labels = rule.get("labels", {})
    fired = [alert["exp_labels"] for case in alert_tests() if case["alertname"] == rule["alert"]
             for alert in case.get("exp_alerts") or []]
    assert any(labels.items() <= dict(found).items() for found in fired), \
        f"no case in {RULE_TESTS} expects {rule['alert']} with {labels}"


@pytest.mark.parametrize("name", sorted({rule["alert"] for rule in alerts()}))
def test_each_alert_has_a_case_where_it_stays_silent(name):
    assert any(case["alertname"] == name and not case.get("exp_alerts") for case in alert_tests()), \
        f"no case in {RULE_TESTS} expects {name} not to fire"


def test_every_case_names_an_alert_of_the_rules():
    names = {rule["alert"] for rule in alerts()}
    assert sorted({case["alertname"] for case in alert_tests()} - names) == []


@pytest.mark.parametrize("rule", alerts(), ids=rule_id)
def test_each_alert_rule_has_a_wait_a_severity_and_names_the_node(rule):
    assert re.fullmatch(r"\d+[smhd]", str(rule.get("for", ""))), "every alert waits (for:) before it fires"
    assert rule.get("labels", {}).get("severity") in ("critical", "warning")
    annotations = rule.get("annotations", {})
    assert set(annotations) >= {"summary", "description"}
    assert "$labels.node" in annotations["summary"] + annotations["description"]


def test_rules_of_one_alert_differ_in_their_labels():
    seen = [rule_id(rule) for rule in alerts()]
    assert sorted({name for name in seen if seen.count(name) > 1}) == []


@pytest.mark.parametrize("rule", rules(), ids=rule_id)
def test_every_series_name_is_in_the_catalogue(rule):
    recorded = {r["record"] for r in rules() if "record" in r}  # a recording rule's own series
    unknown = sorted(name for name in metric_names(rule["expr"]) if not catalogue.known(name) and name not in recorded)
    assert unknown == [], f"{rule_id(rule)}: not in provision/certify/probe/metrics/catalogue.py: {unknown}"


# The Xid catalogue's actions that mean "reset the GPU or reboot" (the DBE and NVLink workflows end in a reset).
RESET_ACTIONS = {"reset_gpu", "reboot", "restart_vm", "workflow_xid_48", "workflow_nvlink_err", "workflow_nvlink5_err"}


def test_the_xids_that_need_a_reset_are_the_xid_catalogues():
    rule = next(r for r in alerts() if r["alert"] == "GpuXidNeedsReset")
    in_rule = [int(code) for code in re.findall(r"DCGM_FI_DEV_XID_ERRORS\s*==\s*(\d+)", rule["expr"])]
    wanted = sorted(code for code, entry in xid_catalog.ENTRIES.items() if entry.action in RESET_ACTIONS)
    assert sorted(in_rule) == wanted
    assert len(in_rule) == len(set(in_rule))
    assert rule["expr"].count(" or ") == len(in_rule) - 1  # nothing else is or-ed in


H200_PROBE = Path(__file__).resolve().parents[2] / "fixtures" / "certify" / "h200" / "probe_standard_root.json"


def test_too_hot_is_certifys_warning_band_of_the_recorded_h200():
    """GpuTooHot's figure: the recorded H200's slowdown threshold less certify's margin."""
    rule = next(r for r in alerts() if r["alert"] == "GpuTooHot")
    slowdown = json.loads(H200_PROBE.read_text())["nvml"]["gpus"][0]["temperature_slowdown_c"]
    assert rule["expr"] == f"DCGM_FI_DEV_GPU_TEMP >= {slowdown - gpu_state.TEMPERATURE_MARGIN_C}"


# A drain reason of each kind, made by the code that sets it, and the drained_by the alert must give it.
REASONS = [
    (health_reason.text([("health.munge", "munge: Error: Failed to access socket")]), "health"),
    (health_reason.text([("health.mount[/shared]", "/shared is not mounted"), ("health.config", "")]), "health"),
    ("gpu-provision-health: health.munge: down", "health"),  # an earlier version's form, still the program's
    (health_reason.active_text([("active.net", "3.1 Gb/s, floor 10 Gb/s")]), "active"),
    (drain_reason(["gpu.ecc", "nccl.all_reduce"]), "certify"),
    (f"{rolling.REASON}: batch 2: slurm: restart slurmd failed", "deploy"),
    (admin.REMOVE_REASON, "removal"),
    ("hc: fan replacement", "admin"),  # an admin's reason in the health program's style, without its mark
    ("certify later", "admin"),
    ("bad DIMM, ticket 4711", "admin"),
]


def _matches(rule: dict, reason: str) -> bool:
    """Whether a SlurmNodeDrained rule's reason matchers (anchored, as Prometheus anchors them) all take the reason."""
    matchers = re.findall(r"reason\s*(=~|!~)\s*`([^`]*)`", rule["expr"])
    assert matchers, rule["expr"]
    return all(bool(re.fullmatch(pattern, reason)) == (op == "=~") for op, pattern in matchers)


@pytest.mark.parametrize(("reason", "drained_by"), REASONS, ids=[r[0][:40] for r in REASONS])
def test_a_drain_reason_is_told_apart_by_who_drained_the_node(reason, drained_by):
    drained = [rule for rule in alerts() if rule["alert"] == "SlurmNodeDrained"]
    assert [rule["labels"]["drained_by"] for rule in drained if _matches(rule, reason)] == [drained_by]
    assert health_reason.is_own(reason) == (drained_by == "health")
    assert health_reason.is_active(reason) == (drained_by == "active")



def test_the_readme_lists_every_alert():
    readme = (RULES.parent / "README.md").read_text()
    listed = set(re.findall(r"^\| (\w+) \|", readme, re.M))
    assert {rule["alert"] for rule in alerts()} <= listed
