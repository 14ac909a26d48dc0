"""The corpus of real tool outputs (tests/fixtures/corpus/<tool>/): each parses to what its sidecar says was
read by eye, and whatever cannot be parsed, corpus or garbage, ends as a failed check quoting a line, never
as an exception, on the paths certify takes (nccl.judge_jobs, the network matrix, the node probe's DCGM step)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from provision.certify.control import network
from provision.certify.control.fleet import Outcome
from provision.certify.judging import nccl, netmatrix
from provision.certify.parsers import ib_write_bw, iperf3, nccl_tests
from provision.certify.probe import dcgm_json as dcgm
from provision.certify.probe import dcgm as dcgm_probe
from provision.certify.probe.parse_errors import ParseError

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "corpus"
TOOLS = ("nccl-tests", "perftest", "iperf3", "dcgm")  # xid/ is another corpus with its own test
FABRIC = nccl.Fabric("H100-SXM", 8, "infiniband", 8, 400.0)
ADDRESSES = {"node-a": "10.0.0.1", "node-b": "10.0.0.2"}


def sidecars() -> list[Path]:
    return sorted(p for tool in TOOLS for p in (CORPUS / tool).glob("*.yaml"))


def output_of(sidecar: Path) -> str:
    """The sample as the runner hands it over: decoded text, carriage returns kept."""
    data = next(p for p in sidecar.parent.glob(f"{sidecar.stem}.*") if p.suffix != ".yaml")
    return data.read_bytes().decode("utf-8", errors="replace")


# ---- the certify paths ---------------------------------------------------------------------------

def through_nccl(text: str):
    """nccl.node_busbw for one node whose all_reduce_perf printed `text`."""
    checks = nccl.judge_jobs([nccl.NcclJob("node", ("node-a",), output=text)], FABRIC)
    return next(c for c in checks if c.check == nccl.NODE_CHECK and c.node == "node-a")


class Fleet:
    """Two nodes whose benchmark clients print `text`; servers start (iperf3 prints a PID) and stop."""

    def __init__(self, text: str) -> None:
        self.text = text

    def run(self, name, command, timeout=60.0):
        if "iperf3 -s" in command:
            return Outcome(name, 0, "4242\n")
        if command.startswith("kill ") or ("ib_write_bw" in command and not command.rstrip().endswith(
                tuple(ADDRESSES.values()))):
            return Outcome(name, 0)
        return Outcome(name, 0, self.text)

    def run_many(self, commands, timeout=60.0):
        return {n: self.run(n, c, timeout) for n, c in commands.items()}


def through_network(text: str, tool: str, monkeypatch):
    """net.pairwise_bw of node-a->node-b when every client prints `text`."""
    monkeypatch.setattr(network, "RDMA_SERVER_WAIT_S", 0)
    fleet = Fleet(text)
    if tool == "perftest":
        pairs = network.measure_rdma(fleet, ADDRESSES, network.IbWriteBw(port=18515))
    else:
        pairs = network.measure_iperf3(fleet, ADDRESSES, "r1", network.Iperf3(port=25000))
    pair_checks, _ = netmatrix.judge_network(list(ADDRESSES), pairs, None)
    return next(c for c in pair_checks if c.subject == "node-a->node-b")


def through_dcgm(text: str):
    """The probe's DCGM checks for `dcgmi diag -j` output `text`."""
    return dcgm_probe.judge_output(text, "node-a", "standard", exit_code=0)


def failed_check(tool: str, text: str, monkeypatch):
    """The check certify makes of unparseable output of `tool`."""
    if tool == "nccl-tests":
        return through_nccl(text)
    if tool == "dcgm":
        checks = through_dcgm(text)
        assert [c.check for c in checks] == ["dcgm.diag"]
        return checks[0]
    return through_network(text, tool, monkeypatch)


# ---- what each parser must produce ---------------------------------------------------------------

def read_nccl(text: str) -> dict:
    run = nccl_tests.parse(text)
    largest = run.largest
    return {"rows": len(run.rows), "largest_bytes": largest.size_bytes, "busbw_at_largest": run.busbw_at_largest(),
            "avg_busbw": run.avg_busbw, "out_of_bounds": run.out_of_bounds, "wrong": run.wrong, "ranks": len(run.ranks),
            "hosts": list(run.hosts), "program": run.program, "redop": largest.redop, "root": largest.root,
            "max_error": largest.out_of_place.max_error}


def read_perftest(text: str) -> dict:
    run = ib_write_bw.parse(text)
    factor = ib_write_bw.TO_GBPS[run.unit_reported]
    return {"unit": run.unit_reported, "rows": len(run.rows), "largest_bytes": run.largest.size_bytes,
            "average_at_largest": run.average_gbps / factor, "device": run.device, "qps": run.qps,
            "link_type": run.link_type}


def read_iperf3(text: str) -> dict:
    result = iperf3.parse(text)
    return {"received_gbps": result.received_gbps, "sent_gbps": result.sent_gbps, "retransmits": result.retransmits,
            "streams": result.streams}


def read_dcgm(text: str) -> dict:
    diag = dcgm.parse(text)
    return {"version": diag.version, "runtime_error": diag.runtime_error,
            "tests": {t.key: t.status for t in diag.tests}}


READ = {"nccl-tests": read_nccl, "perftest": read_perftest, "iperf3": read_iperf3, "dcgm": read_dcgm}


def same(expected, actual) -> bool:
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        return actual == pytest.approx(expected, rel=1e-6)
    if isinstance(expected, str) and isinstance(actual, str) and expected != actual:
        return actual.startswith(expected)  # runtime errors: the sidecar keeps their opening words
    return expected == actual


@pytest.mark.parametrize("sidecar", sidecars(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_sample_parses_to_what_was_read_by_eye(sidecar, monkeypatch):
    meta = yaml.safe_load(sidecar.read_text())
    text = output_of(sidecar)
    if meta["parseable"]:
        actual = READ[meta["tool"]](text)
        wrong = {k: (v, actual[k]) for k, v in meta["expect"].items() if not same(v, actual[k])}
        assert not wrong, f"expected vs parsed: {wrong}"
    else:
        check = failed_check(meta["tool"], text, monkeypatch)
        assert check.verdict == "fail"
        assert meta["unparseable_line"] in check.detail


@pytest.mark.parametrize("sidecar", [s for s in sidecars() if yaml.safe_load(s.read_text())["parseable"]],
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_parseable_samples_are_judged_on_their_figures(sidecar, monkeypatch):
    meta = yaml.safe_load(sidecar.read_text())
    text = output_of(sidecar)
    if meta["tool"] == "nccl-tests":
        check = through_nccl(text)
        if meta["expect"]["wrong"]:
            assert check.verdict == "fail" and "wrong results" in check.detail
        else:
            assert check.value == pytest.approx(meta["expect"]["busbw_at_largest"])
    elif meta["tool"] == "dcgm":
        checks = {c.check: c for c in through_dcgm(text)}
        if meta["expect"]["runtime_error"]:
            run_check = checks["dcgm.diag"]
            assert run_check.verdict == "fail" and meta["expect"]["runtime_error"] in run_check.detail
        else:
            verdicts = {k.removeprefix("dcgm."): c.verdict for k, c in checks.items()}
            assert verdicts == {k: dcgm_probe.VERDICT[v] for k, v in meta["expect"]["tests"].items()}
    else:
        check = through_network(text, meta["tool"], monkeypatch)
        assert check.value is not None and check.value > 0


def test_the_corpus_holds_forty_real_outputs_each_with_a_source():
    metas = [yaml.safe_load(s.read_text()) for s in sidecars()]
    assert all(m["source"] and m["read_by_eye"] and m["tool"] in TOOLS for m in metas)
    assert all(m.get("derived_from") for m in metas if m["source"] == "derived here")
    counted = [m for m in metas if m["counted"]]
    assert all(m["source"].startswith("https://github.com/") for m in counted)
    assert len(counted) >= 40
    assert {m["tool"] for m in counted} == set(TOOLS)


# ---- garbage on every path -----------------------------------------------------------------------

def garbage() -> dict[str, str]:
    rng = random.Random(15)
    binary = bytes(rng.randrange(256) for _ in range(4096)).decode("latin-1")
    return {"empty": "", "blank": "\n \n\t\n", "random-bytes": binary, "nul-bytes": "\x00" * 512,
            "one-long-line": "x" * 200_000, "json-list": "[1, 2, 3]", "json-scalar": "{}" * 3,
            "deep-json": "[" * 100_000, "deep-json-object": '{"end": ' + "[" * 100_000,
            "html": "<html><body>502 Bad Gateway</body></html>",
            "utf8-junk": "\ufffd\u202e\U0001f525 \u00e9\u00e8\n" * 50}


def truncations() -> list[tuple[str, str]]:
    """Every corpus sample cut at five places: what a killed run leaves behind."""
    out = []
    for sidecar in sidecars():
        meta = yaml.safe_load(sidecar.read_text())
        text = output_of(sidecar)
        for cut in (1, len(text) // 5, len(text) // 2, len(text) - 3):
            out.append((meta["tool"], text[:max(cut, 0)]))
    return out


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", sorted(garbage()))
def test_garbage_fails_a_check_and_quotes_what_it_got(tool, name, monkeypatch):
    text = garbage()[name]
    check = failed_check(tool, text, monkeypatch)
    assert check.verdict == "fail"
    assert "output is empty" in check.detail or "'" in check.detail  # the quoted line


def test_truncated_outputs_never_raise(monkeypatch):
    for tool, text in truncations():
        if tool == "nccl-tests":
            assert through_nccl(text).verdict in ("pass", "warn", "fail")
        elif tool == "dcgm":
            assert all(c.verdict in ("pass", "warn", "fail", "na") for c in through_dcgm(text))
        else:
            assert through_network(text, tool, monkeypatch).verdict in ("pass", "warn", "fail")


def test_shuffled_lines_never_raise(monkeypatch):
    rng = random.Random(15)
    for tool, text in truncations()[::4]:
        lines = text.splitlines()
        rng.shuffle(lines)
        mixed = "\n".join(lines)
        for parse in (nccl_tests.parse, ib_write_bw.parse, iperf3.parse, dcgm.parse):
            try:
                parse(mixed)
            except ParseError:
                pass
