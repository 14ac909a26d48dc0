"""`provision exec` across nodes: selection, quoting, parallel runs, folded output, --json and --debug after --."""
from __future__ import annotations

import json
import shlex
import threading

import pytest
from hypothesis import given, strategies as st

from provision.adaptors.ssh import CommandTimeout
from provision.cli import main
from provision.errors import ConnectionFailure, UsageError
from provision.records import ClusterInfo, NodeInfo
from provision.remote import commands
from provision.remote.commands import CommandResult


def _node(name: str, group: str, *roles: str) -> NodeInfo:
    return NodeInfo(name=name, group=group, roles=roles or ("compute",), address="127.0.0.1")


CLUSTER = ClusterInfo(name="demo", provider="static", nodes=(
    _node("ctl01", "ctl", "controller"), *(_node(f"compute0{i}", "compute") for i in (1, 2, 3)),
    _node("gpu01", "gpu"), _node("gpu02", "gpu")))


def _names(nodes) -> list[str]:
    return [n.name for n in nodes]


@pytest.mark.parametrize("selectors, expected", [
    ([], ["ctl01"]),
    (["compute[01-03]"], ["compute01", "compute02", "compute03"]),
    (["gpu"], ["gpu01", "gpu02"]),
    (["gpu02", "compute[02,01]"], ["compute01", "compute02", "gpu02"]),
    (["gpu", "gpu01"], ["gpu01", "gpu02"]),
    (["ctl01,gpu02"], ["ctl01", "gpu02"]),
])
def test_node_selectors_expand_to_cluster_nodes_in_cluster_order(selectors, expected):
    assert _names(commands.select_nodes(CLUSTER, selectors)) == expected


@pytest.mark.parametrize("selector, words", [
    ("compute[01-99]", "stands for 99 names"), ("compute[01-04]", "'compute04' is not a node"), ("compute09", "'compute09' is not a node of demo"),
    ("gpu_a", "not a valid hostlist expression"), ("compute[1-", "not a valid hostlist expression"),
])
def test_a_selector_naming_no_node_is_a_usage_error(selector, words):
    with pytest.raises(UsageError, match=r"^--node: ") as caught:
        commands.select_nodes(CLUSTER, [selector])
    assert words in str(caught.value)


def test_several_arguments_are_each_quoted():
    assert commands.command_line(["bash", "-c", "echo a b"]) == "bash -c 'echo a b'"
    assert commands.command_line(["printf", "%s\n", "$HOME", "a;b", "it's"]) == \
        "printf '%s\n' '$HOME' 'a;b' 'it'\"'\"'s'"


def test_one_argument_is_a_shell_command_line_as_written():
    assert commands.command_line(["ls /dev | wc -l"]) == "ls /dev | wc -l"


def test_no_command_is_a_usage_error():
    with pytest.raises(UsageError):
        commands.command_line([])


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")), min_size=2))
def test_quoted_arguments_split_back_to_themselves(argv):
    assert shlex.split(commands.command_line(argv)) == argv


def test_nodes_run_at_the_same_time_and_results_keep_node_order():
    nodes = commands.select_nodes(CLUSTER, ["compute", "gpu"])
    together = threading.Barrier(len(nodes), timeout=5)  # breaks unless every node's run is under way at once

    def runner(cluster, node, command):
        together.wait()
        return CommandResult(node.name, 0, f"{node.name}: {command}\n", "")
    results = commands.run_across(CLUSTER, nodes, "uptime", runner)
    assert [r.stdout for r in results] == [f"{n.name}: uptime\n" for n in nodes]


def test_an_unreachable_node_gives_255_and_the_others_still_run():
    def runner(cluster, node, command):
        if node.name == "gpu01":
            raise ConnectionFailure("gpu01: 10.0.0.1:22: connection refused", hint="is sshd running?")
        return CommandResult(node.name, 0, "ok\n", "")
    results = commands.run_across(CLUSTER, commands.select_nodes(CLUSTER, ["gpu"]), "true", runner)
    assert [(r.rc, r.stdout, r.stderr, r.error) for r in results] == [
        (255, "", "", "10.0.0.1:22: connection refused; is sshd running?"), (0, "ok\n", "", None)]
    assert commands.worst_rc(results) == 255


def test_a_command_stopped_at_its_timeout_gives_124_with_what_it_wrote():
    def runner(cluster, node, command):
        raise CommandTimeout(f"{node.name}: 'sleep 1000' still ran after 5 s; stopped it there", hint="more time",
                             stdout="partial\n", stderr="")
    [result] = commands.run_across(CLUSTER, [CLUSTER.controller], "sleep 1000", runner)
    assert (result.rc, result.stdout, result.error) == (124, "partial\n",
                                                         "'sleep 1000' still ran after 5 s; stopped it there; more time")


def test_the_same_failure_on_several_nodes_folds_into_one_block():
    def runner(cluster, node, command):
        raise ConnectionFailure(f"{node.name}: timed out", hint="is the node up?")
    blocks = commands.fold(commands.run_across(CLUSTER, commands.select_nodes(CLUSTER, ["compute"]), "true", runner))
    assert [(b.hostlist, b.rc, b.error) for b in blocks] == [("compute[01-03]", 255, "timed out; is the node up?")]


def test_all_selects_every_node():
    assert _names(commands.select_nodes(CLUSTER, ["all"])) == _names(CLUSTER.nodes)
    assert _names(commands.select_nodes(CLUSTER, ["gpu01", "all"])) == _names(CLUSTER.nodes)


def test_an_unknown_node_gets_did_you_mean():
    with pytest.raises(UsageError, match="'compute4' is not a node of demo; did you mean compute01") as caught:
        commands.select_nodes(CLUSTER, ["compute4"])
    assert "(nodes: compute[01-03],ctl01,gpu[01-02])" in str(caught.value)


def test_identical_outcomes_fold_into_one_block_with_a_hostlist():
    results = [CommandResult("compute01", 0, "5.15\n", ""), CommandResult("compute02", 0, "6.1\n", ""),
               CommandResult("compute03", 0, "5.15\n", ""), CommandResult("gpu01", 1, "5.15\n", ""),
               CommandResult("gpu02", 0, "5.15\n", "")]
    blocks = commands.fold(results)
    assert [(b.hostlist, b.rc, b.stdout) for b in blocks] == [
        ("compute[01,03],gpu02", 0, "5.15\n"), ("compute02", 0, "6.1\n"), ("gpu01", 1, "5.15\n")]
    assert commands.worst_rc(results) == 1 and commands.worst_rc([]) == 0


@pytest.mark.parametrize("argv, expected", [
    (["--debug", "plan", "x"], (["plan", "x"], True)),
    (["exec", "x", "--debug", "--", "prog", "--debug"], (["exec", "x", "--", "prog", "--debug"], True)),
    (["exec", "x", "--", "prog", "--debug"], (["exec", "x", "--", "prog", "--debug"], False)),
    (["plan", "x"], (["plan", "x"], False)),
])
def test_debug_is_taken_out_only_before_the_double_dash(argv, expected):
    assert main.split_debug(argv) == expected


@pytest.fixture()
def fake_ssh(monkeypatch, tmp_path):
    """A static spec whose nodes answer through a fake runner (no SSH); returns the spec path and the calls."""
    spec = tmp_path / "c.yaml"
    monkeypatch.setenv("PROVISION_STATE_DIR", str(tmp_path / "state"))
    with pytest.raises(SystemExit):
        main.run(["init", "-p", "static", "-o", str(spec)])
    calls: list[tuple[str, str]] = []

    def runner(cluster, node, command, timeout):
        calls.append((node.name, command))
        if command == "hung":  # every node hangs before its SSH greeting; the timeout shows it was passed on
            raise ConnectionFailure(f"{node.name}: 10.0.0.2:22: accepted the connection but sent no SSH greeting "
                                    f"(timeout {timeout:.0f} s)", hint="check the node")
        return CommandResult(node.name, 2 if node.name == "gpu02" else 0, f"kernel 6.1 {command}\n",
                             "warn\n" if node.name == "gpu02" else "")
    monkeypatch.setattr(commands, "run_on", runner)
    return spec, calls


def _run_cli(*argv: str) -> int:
    with pytest.raises(SystemExit) as done:
        main.run(list(argv))
    return done.value.code


def test_exec_folds_output_and_exits_with_the_worst_status(fake_ssh, capsys):
    spec, calls = fake_ssh
    code = _run_cli("exec", str(spec), "--node", "gpu[01-03]", "-n", "head01", "--", "bash", "-c", "echo a b")
    shown = capsys.readouterr()
    assert code == 2
    assert sorted(calls) == [(n, "bash -c 'echo a b'") for n in ("gpu01", "gpu02", "gpu03", "head01")]
    assert "gpu[01,03],head01 (3 nodes, exit 0)\n---------------\nkernel 6.1 bash -c 'echo a b'\n" in shown.out
    assert "gpu02 (1 node, exit 2)" in shown.out and shown.err == "warn\n"


def test_exec_on_one_node_passes_output_through_and_keeps_debug_after_the_double_dash(fake_ssh, capsys):
    spec, calls = fake_ssh
    assert _run_cli("exec", str(spec), "--debug", "-n", "gpu01", "--", "prog", "--debug") == 0
    assert calls == [("gpu01", "prog --debug")]
    assert capsys.readouterr().out == "kernel 6.1 prog --debug\n"


def test_exec_json_gives_each_node_its_status_and_output(fake_ssh, capsys):
    spec, _ = fake_ssh
    assert _run_cli("exec", str(spec), "-n", "gpu[01-02]", "--json", "--", "uname") == 2
    assert json.loads(capsys.readouterr().out) == {"rc": 2, "nodes": [
        {"node": "gpu01", "rc": 0, "stdout": "kernel 6.1 uname\n", "stderr": "", "error": None},
        {"node": "gpu02", "rc": 2, "stdout": "kernel 6.1 uname\n", "stderr": "warn\n", "error": None}]}


def test_exec_to_an_unreachable_node_names_it_and_the_cause(fake_ssh, capsys):
    spec, _ = fake_ssh
    assert _run_cli("exec", str(spec), "-n", "gpu01", "--timeout", "7", "--", "hung") == 255
    shown = capsys.readouterr()
    assert shown.out == "" and shown.err == ("error: gpu01: 10.0.0.2:22: accepted the connection but sent no SSH "
                                             "greeting (timeout 7 s); check the node\n")


def test_exec_json_carries_the_reason_and_no_traceback(fake_ssh, capsys):
    spec, _ = fake_ssh
    assert _run_cli("exec", str(spec), "-n", "all", "--json", "--", "hung") == 255
    shown = capsys.readouterr()
    nodes = json.loads(shown.out)["nodes"]
    assert len(nodes) > 1 and {n["rc"] for n in nodes} == {255} and all(n["stderr"] == "" for n in nodes)
    assert all(n["error"].startswith("10.0.0.2:22: accepted the connection") for n in nodes)
    assert "Traceback" not in shown.out + shown.err and shown.err == ""


def test_exec_on_several_nodes_folds_the_failure_under_their_hostlist(fake_ssh, capsys):
    spec, _ = fake_ssh
    assert _run_cli("exec", str(spec), "-n", "gpu[01-02]", "--", "hung") == 255
    shown = capsys.readouterr()
    assert shown.out == "---------------\ngpu[01-02] (2 nodes, exit 255)\n---------------\n"
    assert shown.err.startswith("error: gpu[01-02]: 10.0.0.2:22: accepted the connection")
