"""The Slurm collector (provision.certify.probe.metrics.slurm) against Slurm's output formats
(tests/fixtures/slurm-metrics, tests/fixtures/slurm/status) and stand-in commands on PATH: what each series says, that
a failing or hanging command costs only its own series, and that a hostile drain reason stays one escaped label."""
from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
from exposition import parse

from provision.certify.probe.metrics import slurm, slurm_output
from provision.certify.probe.metrics.__main__ import main
from provision.certify.probe.metrics.catalogue import TEXTFILES
from provision.certify.probe.metrics.textfile import render


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
OUTPUTS = FIXTURES / "slurm-metrics"


def _text(name: str) -> str:
    return (OUTPUTS / name).read_text()


@pytest.mark.parametrize(("text", "state", "drained"), [
    ("idle", "idle", False), ("mixed", "mixed", False), ("allocated", "allocated", False),
    ("drained", "drained", True), ("draining", "draining", True), ("down*", "down", False),
    ("idle+drain", "drained", True), ("mixed+drain", "draining", True), ("mixed-", "mixed", False),
    ("allocated+drain", "draining", True), ("idle+drain+not_responding", "drained", True),
    ("down+not_responding", "down", False), ("down+drain+not_responding", "drained", True),
    ("idle+completing+drain", "draining", True), ("idle+maintenance+reserved", "idle", False),
    ("idle~", "idle", False), ("idle#", "idle", False), ("idle!", "idle", False), ("idle%", "idle", False),
    ("mix$", "mixed", False), ("alloc@", "allocated", False), ("idle^", "idle", False), ("drng*", "draining", True),
    ("drain", "drained", True), ("comp", "completing", False), ("MIXED+DRAIN", "draining", True), ("", "unknown", False),
])
def test_every_form_of_a_node_state_reads_as_its_base_and_drain(text, state, drained):
    assert slurm_output.state_label(text) == (state, drained)


@pytest.mark.parametrize(("gres", "count"), [
    ("(null)", 0), ("gpu:8", 8), ("gpu:h100:8(S:0-1)", 8), ("gpu:h100:3(IDX:0-2)", 3), ("gpu:l40s:2(IDX:0,3)", 2),
    ("gpu:h100:0(IDX:N/A)", 0), ("gpu:a100:2(S:0),gpu:v100:2(S:1)", 4), ("gpu:l40s:4(S:0),nvme:1", 4), ("nvme:1", 0),
    ("gpu:h100:x", None),
])
def test_gpus_are_counted_from_gres_whatever_else_the_node_has(gres, count):
    assert slurm_output.gpu_count(gres) == count


def test_sinfo_22_05_gives_each_node_once_with_its_drain_reason_whole():
    rows, notes = slurm_output.nodes(_text("sinfo_22.05.txt"))
    by_name = {r.name: r for r in rows}
    assert notes == [] and len(rows) == 8  # gpu02 printed twice, kept once
    assert by_name["compute01"].state == "draining" and by_name["compute01"].reason == \
        "admin: swap fan | ticket=123 (rack 4, slot 7)"
    assert by_name["compute02"].reason == "" and not by_name["compute02"].drained
    gpu02 = by_name["gpu02"]
    assert (gpu02.cpus_allocated, gpu02.cpus_idle, gpu02.cpus_total) == (96, 96, 192)
    assert (gpu02.memory_mb, gpu02.memory_allocated_mb, gpu02.gpus, gpu02.gpus_allocated) == (2063000, 1031500, 8, 3)
    assert (by_name["l40s02"].gpus, by_name["l40s02"].gpus_allocated) == (4, 2)
    assert by_name["gpu03"].state == "down" and by_name["gpu03"].reason == "Not responding"


def test_sinfo_24_11_and_the_recorded_status_lines_read_the_same_way():
    rows, notes = slurm_output.nodes(_text("sinfo_24.11.txt"))
    states = {r.name: (r.state, r.drained) for r in rows}
    assert notes == [] and states["gpu02"] == ("drained", True) and states["gpu03"] == ("idle", False)
    assert states["gpu01"] == ("allocated", False)
    recorded = json.loads((FIXTURES / "slurm/status/24.11-drain-held-health.json").read_text())["stdout"]
    for line in recorded.splitlines()[:3]:  # the recording's first fields, in the collector's layout
        name, state, *_, reason = line.split("|", 4)
        row = slurm_output.node_row(f"{name}|{state}|0/2/0/2|22900|0|(null)|gpu:0|{reason}")
        assert row is not None and row.name == name and row.drained == ("drain" in state)


def test_a_reason_is_cut_to_200_characters():
    row = slurm_output.node_row("n1|idle+drain|0/2/0/2|1|0|(null)|gpu:0|" + "r" * 500)
    assert len(row.reason) == slurm_output.REASON_MAX == 200


def test_lines_that_do_not_read_are_skipped_and_said():
    rows, notes = slurm_output.nodes("garbage\n" + _text("sinfo_24.11.txt") + "n9|idle|x/y|1|0|(null)|gpu:0|none\n")
    assert len(rows) == 6 and len(notes) == 2 and notes[0].startswith("sinfo: skipped")
    jobs, job_notes = slurm_output.jobs("RUNNING|batch|alice|a|None\nslurm_load_jobs error: x\n")
    assert len(jobs) == 1 and len(job_notes) == 1


def test_squeue_counts_jobs_and_pending_reasons():
    rows, notes = slurm_output.jobs(_text("squeue.txt"))
    samples = {(s.name, s.labels): s.value for s in slurm.job_samples(rows)}
    assert notes == []
    assert samples[("slurm_jobs", (("state", "running"), ("partition", "batch"), ("user", "alice"),
                                   ("account", "physics")))] == 2
    assert samples[("slurm_jobs_pending", (("partition", "hgx"), ("reason", "ReqNodeNotAvail")))] == 1
    assert samples[("slurm_jobs_pending", (("partition", "batch,hgx"), ("reason", "QOSMaxGRESPerUser")))] == 1
    assert sum(v for (n, _), v in samples.items() if n == "slurm_jobs") == 9
    assert sum(v for (n, _), v in samples.items() if n == "slurm_jobs_pending") == 5


@pytest.mark.parametrize(("name", "figures"), [
    ("sdiag_22.05.txt", slurm_output.Scheduler(3, 0, 89, 2512)),
    ("sdiag_24.11.txt", slurm_output.Scheduler(5, 17, 23115, 1250000)),
    ("sinfo_22.05.txt", slurm_output.Scheduler()),
])
def test_sdiag_figures_are_read_in_their_sections(name, figures):
    assert slurm_output.scheduler(_text(name)) == figures


def _stand_ins(bin_dir: Path, **scripts: str) -> None:
    """Stand-in Slurm commands: each prints its fixture unless the case gives it a script of its own."""
    bin_dir.mkdir(exist_ok=True)
    defaults = {"sinfo": f"cat {OUTPUTS / 'sinfo_22.05.txt'}", "squeue": f"cat {OUTPUTS / 'squeue.txt'}",
                "sdiag": f"cat {OUTPUTS / 'sdiag_24.11.txt'}", "sacctmgr": "echo golden"}
    for command, body in {**defaults, **scripts}.items():
        path = bin_dir / command
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def slurm_bin(tmp_path, monkeypatch):
    """A PATH whose Slurm commands are stand-ins (tests may replace one)."""
    bin_dir = tmp_path / "bin"
    _stand_ins(bin_dir)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def _series(text: str) -> dict[tuple[str, tuple], float]:
    return {(name, tuple(sorted(labels.items()))): value for name, labels, value in parse(text)}


def test_the_collector_writes_every_series_into_its_textfile(slurm_bin, tmp_path):
    out = tmp_path / "node-exporter"
    out.mkdir()
    assert main(["slurm", "--out", str(out), "--timeout", "5", "--accounting"]) == 0
    series = _series((out / TEXTFILES["slurm"]).read_text())
    assert series[("slurm_node_state", (("node", "gpu02"), ("state", "mixed")))] == 1
    assert series[("slurm_node_drained", (("node", "compute01"),
                                          ("reason", "admin: swap fan | ticket=123 (rack 4, slot 7)")))] == 1
    assert series[("slurm_node_memory_bytes", (("node", "gpu02"), ("status", "allocated")))] == 1031500 * 2**20
    assert series[("slurm_node_gpus", (("node", "gpu01"), ("status", "allocated")))] == 8
    assert series[("slurm_scheduler_backfill_last_cycle_seconds", ())] == 1.25
    assert series[("slurm_scheduler_last_cycle_seconds", ())] == pytest.approx(0.023115)
    assert series[("slurm_controller_up", ())] == 1 and series[("slurm_dbd_up", ())] == 1
    assert {labels[0][1]: v for (n, labels), v in series.items() if n == "slurm_collector_command_ok"} == {
        "sinfo": 1, "squeue": 1, "sdiag": 1, "sacctmgr": 1}
    assert abs(series[("slurm_collector_last_run_timestamp_seconds", ())] - time.time()) < 60


def test_without_accounting_slurmdbd_is_not_asked(slurm_bin):
    _stand_ins(slurm_bin, sacctmgr="exit 1")
    collection = slurm.collect(5, accounting=False)
    assert "sacctmgr" not in collection.ok
    assert not any(s.name == "slurm_dbd_up" for s in collection.samples)


def test_a_hanging_command_costs_only_its_series_and_the_run_ends_in_time(slurm_bin):
    _stand_ins(slurm_bin, squeue="exec sleep 60", sacctmgr="exec sleep 60", sdiag="sleep 0.5; cat " + str(
        OUTPUTS / "sdiag_24.11.txt"))
    began = time.monotonic()
    collection = slurm.collect(1.0, accounting=True)
    assert time.monotonic() - began < 10  # two commands sleep 60 s: each is ended by the 1 s timeout
    assert collection.ok == {"sinfo": True, "squeue": False, "sdiag": True, "sacctmgr": False}
    names = {s.name for s in collection.samples}
    assert "slurm_jobs" not in names and "slurm_node_state" in names and "slurm_scheduler_threads" in names
    assert [s.value for s in collection.samples if s.name == "slurm_dbd_up"] == [0]
    assert any(n.startswith("squeue: no answer") for n in collection.notes)


def test_slurmctld_down_reads_as_controller_down_with_every_command_not_ok(slurm_bin, tmp_path):
    down = ("echo 'slurm_load_partitions: Unable to contact slurm controller (connect failure)' >&2; exit 1")
    _stand_ins(slurm_bin, sinfo=down, squeue=down, sdiag="echo 'sdiag: error: slurm_get_statistics: "
               "Unable to contact slurm controller (connect failure)' >&2; exit 1")
    collection = slurm.collect(5, accounting=False)
    assert collection.ok == {"sinfo": False, "squeue": False, "sdiag": False}
    assert [s.value for s in collection.samples if s.name == "slurm_controller_up"] == [0]
    assert not any(s.name.startswith(("slurm_node_", "slurm_jobs", "slurm_scheduler_")) for s in collection.samples)
    parse(render(collection.samples))  # still a valid textfile


def test_a_missing_command_is_not_ok_and_the_others_still_report(slurm_bin):
    (slurm_bin / "sdiag").unlink()
    collection = slurm.collect(5, accounting=False)
    assert collection.ok == {"sinfo": True, "squeue": True, "sdiag": False}


def test_output_that_does_not_read_at_all_is_not_ok(slurm_bin):
    _stand_ins(slurm_bin, sinfo="echo 'PARTITION AVAIL TIMELIMIT NODES STATE NODELIST'", sdiag="echo hello")
    collection = slurm.collect(5, accounting=False)
    assert collection.ok == {"sinfo": False, "squeue": True, "sdiag": False}
    assert [s.value for s in collection.samples if s.name == "slurm_controller_up"] == [1]  # it answered


def test_a_hostile_drain_reason_stays_one_escaped_label(slurm_bin, tmp_path):
    hostile = 'x\\" } evil{a="1"} 1\\nslurm_controller_up 0 \\\\ end'
    _stand_ins(slurm_bin, sinfo=f"printf '%s\\n' 'n1|idle+drain|0/2/0/2|100|0|(null)|gpu:0|{hostile}'")
    out = tmp_path / "out"
    out.mkdir()
    assert main(["slurm", "--out", str(out), "--timeout", "5"]) == 0
    text = (out / TEXTFILES["slurm"]).read_text()
    series = _series(text)
    assert series[("slurm_node_drained", (("node", "n1"), ("reason", hostile)))] == 1
    assert series[("slurm_controller_up", ())] == 1  # the reason's "slurm_controller_up 0" is no series of its own


def test_a_reason_with_a_line_feed_reads_back_whole(slurm_bin, tmp_path):
    _stand_ins(slurm_bin, sinfo="printf 'n1|idle+drain|0/2/0/2|100|0|(null)|gpu:0|a\\\\b \"q\" ok\\n'")
    row = slurm.collect(5, accounting=False).samples
    [drained] = [s for s in row if s.name == "slurm_node_drained"]
    assert drained.labels == (("node", "n1"), ("reason", 'a\\b "q" ok'))
    assert '\\\\b \\"q\\"' in render([drained])


def test_the_command_line_exits_1_when_the_directory_is_missing_and_2_on_bad_options(slurm_bin, tmp_path, capsys):
    assert main(["slurm", "--out", str(tmp_path / "absent")]) == 1
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        main(["slurm", "--timeout", "0"])
    assert exit_.value.code == 2


def test_the_commands_ask_for_the_fields_in_the_parsers_order():
    assert slurm.SINFO[-1] == ("NodeList:|,StateComplete:|,CPUsState:|,Memory:|,AllocMem:|,Gres:|,GresUsed:|,"
                               "Reason:")
    assert slurm.SQUEUE[-1] == "%T|%P|%u|%a|%r"


def test_a_reason_that_is_not_utf_8_is_read_with_a_replacement_character(slurm_bin):
    _stand_ins(slurm_bin, sinfo="printf 'n1|idle+drain|0/2/0/2|100|0|(null)|gpu:0|caf\\351 fan\\n'")
    collection = slurm.collect(5, accounting=False)
    [drained] = [s for s in collection.samples if s.name == "slurm_node_drained"]
    assert drained.labels == (("node", "n1"), ("reason", "caf\ufffd fan")) and collection.ok["sinfo"]
