"""Node exporter's textfile format (provision.certify.probe.metrics.textfile): what it renders reads back through the
exposition format's grammar whatever the label text, only the catalogue's series pass, and a write replaces the file
in one step."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from exposition import parse
from hypothesis import given, settings, strategies as st

from provision.certify.probe.metrics import textfile
from provision.certify.probe.metrics.catalogue import OURS
from provision.certify.probe.metrics.textfile import Sample, render, sample, write

@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_label_text_reads_back_the_same(reason):
    text = render([sample("slurm_node_drained", 1, node="gpu01", reason=reason)])
    [(name, labels, value)] = parse(text)
    expected = reason.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate cannot be written: "?"
    assert (name, labels, value) == ("slurm_node_drained", {"node": "gpu01", "reason": expected}, 1.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=20), st.integers(0, 10**6)), max_size=12, unique_by=lambda t: t[0]))
def test_many_series_read_back_whatever_their_order(pairs):
    samples = [sample("slurm_jobs", n, state="pending", partition=p, user="u", account="a") for p, n in pairs]
    read = parse(render(samples))
    assert sorted((labels["partition"], value) for _, labels, value in read) == sorted(
        (p.encode("utf-8", "replace").decode(), float(n)) for p, n in pairs)
    assert render(list(reversed(samples))) == render(samples)  # the same bytes whatever the order given


def test_a_hostile_drain_reason_is_escaped_on_one_line():
    text = render([sample("slurm_node_drained", 1, node="n1", reason='a\\b "quoted"\nnext} x="1"')])
    assert 'slurm_node_drained{node="n1",reason="a\\\\b \\"quoted\\"\\nnext} x=\\"1\\""} 1\n' in text
    assert len([ln for ln in text.splitlines() if not ln.startswith("#")]) == 1


def test_help_and_type_come_from_the_catalogue_once_per_name():
    text = render([sample("slurm_node_cpus", 2, node="a", status="total"),
                   sample("slurm_node_cpus", 1, node="a", status="idle"), sample("slurm_controller_up", 1)])
    assert text.count("# TYPE slurm_node_cpus gauge\n") == 1
    assert f"# HELP slurm_controller_up {OURS['slurm_controller_up'].help}\n" in text
    assert text.index("slurm_controller_up 1") < text.index('slurm_node_cpus{node="a",status="idle"} 1') \
        < text.index('slurm_node_cpus{node="a",status="total"} 2')


@pytest.mark.parametrize(("value", "shown"), [(3, "3"), (0.25, "0.25"), (1795796281.123, "1795796281.123"),
                                              (float("nan"), "NaN"), (float("inf"), "+Inf"), (-1.0, "-1")])
def test_values_are_written_as_the_format_reads_them(value, shown):
    assert render([sample("slurm_scheduler_threads", value)]).splitlines()[-1] == f"slurm_scheduler_threads {shown}"


@pytest.mark.parametrize(("build", "message"), [
    (lambda: sample("slurm_nodes_total", 1), "not in the catalogue"),
    (lambda: sample("slurm_node_cpus", 1, node="a"), "labels"),
    (lambda: sample("slurm_controller_up", 1, node="a"), "labels"),
    (lambda: render([Sample("slurm_node_cpus", (("status", "total"), ("node", "a")), 1.0)]), "catalogue"),
    (lambda: render([Sample("made_up", (), 1.0)]), "catalogue"),
    (lambda: render([sample("slurm_controller_up", 1), sample("slurm_controller_up", 0)]), "twice"),
])
def test_a_name_or_label_outside_the_catalogue_is_refused(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_a_write_replaces_the_file_whole_with_mode_0644(tmp_path):
    os.umask(0o077)  # a restrictive umask must not make the file unreadable to node exporter
    try:
        path = write(tmp_path, "gpu_provision_slurm.prom", [sample("slurm_controller_up", 1)])
    finally:
        os.umask(0o022)
    assert path == tmp_path / "gpu_provision_slurm.prom"
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert parse(path.read_text()) == [("slurm_controller_up", {}, 1.0)]
    write(tmp_path, "gpu_provision_slurm.prom", [sample("slurm_controller_up", 0)])
    assert parse(path.read_text()) == [("slurm_controller_up", {}, 0.0)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gpu_provision_slurm.prom"]  # no temporary left


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    path = write(tmp_path, "x.prom", [sample("slurm_controller_up", 1)])
    with pytest.raises(ValueError):
        write(tmp_path, "x.prom", [sample("slurm_controller_up", 1), sample("slurm_controller_up", 1)])

    def broken(*_args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(textfile.os, "replace", broken)
    with pytest.raises(OSError, match="No space"):
        write(tmp_path, "x.prom", [sample("slurm_controller_up", 0)])
    assert parse(path.read_text()) == [("slurm_controller_up", {}, 1.0)]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.prom"]


def test_a_missing_directory_is_an_error_that_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="node-exporter.*does not exist"):
        write(tmp_path / "node-exporter", "x.prom", [sample("slurm_controller_up", 1)])
    assert not (tmp_path / "node-exporter").exists()


def test_the_temporary_file_is_never_one_node_exporter_reads(tmp_path, monkeypatch):
    seen = []
    real = textfile.os.replace

    def spy(source, target):
        seen.append(Path(source).name)
        real(source, target)

    monkeypatch.setattr(textfile.os, "replace", spy)
    write(tmp_path, "gpu_provision_health.prom", [sample("gpu_provision_health_pass_ok", 1)])
    [temporary] = seen
    assert not temporary.endswith(".prom") and temporary.startswith(".")  # the collector reads *.prom only
