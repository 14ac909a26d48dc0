"""`provision health` reads each node's last pass: a record, none yet, or one it cannot read."""
from __future__ import annotations

import json

from provision.health import parse
from provision.remote import CommandResult


def test_a_failed_pass_names_its_checks_and_what_slurm_was_told():
    record = {"node": "compute02", "started": "2026-11-23T19:00:00+0000", "seconds": 0.08, "ok": False,
              "action": "drained", "reason": "gpu-provision-health: health.munge: munge: Error", "trigger": "service",
              "checks": [{"check": "health.munge", "verdict": "fail", "subject": None},
                         {"check": "health.mount", "verdict": "fail", "subject": "/shared"},
                         {"check": "health.config", "verdict": "pass", "subject": None}]}
    found = parse(CommandResult("compute02", 0, json.dumps(record), ""))
    assert found.ok is False and found.failed == ("health.munge", "health.mount[/shared]")
    assert found.action == "drained" and found.trigger == "service" and found.to_dict()["failed"] == list(found.failed)


def test_no_record_yet_and_an_unreadable_one_are_told_apart():
    missing = parse(CommandResult("compute01", 1, "", "cat: /var/lib/gpu-provision/health/last.json: No such file or "
                                                      "directory\n"))
    assert missing.ok is None and missing.error == "no health record yet"
    garbled = parse(CommandResult("compute01", 0, "{not json", ""))
    assert garbled.ok is None and garbled.error.startswith("unreadable health record")
    unreachable = parse(CommandResult("compute03", 255, "", "compute03: connection refused\n"))
    assert unreachable.ok is None and unreachable.error == "compute03: connection refused"
