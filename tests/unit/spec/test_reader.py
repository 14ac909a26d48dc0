"""Reading a spec within limits: every hostile file named in issue 21 ends in one clear error, fast, never a hang.

Each case runs the real CLI in this process (exit code and stderr) with a time bound well below what the issue
measured (alias bomb 15-29 s, a FIFO forever, /dev/zero until MemoryError, deep nesting a RecursionError).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from cli_contract import cli, one_error_line as _one_error_line

from provision.errors import SpecError
from provision.limits import MAX_SPEC_BYTES, MAX_YAML_DEPTH
from provision.spec.loader import validate_file

GOOD = """\
name: demo
provider:
  type: sandbox
node_groups:
  - name: ctl
    roles: [controller]
    count: 1
  - name: compute
    roles: [compute]
    count: 3
"""

# 9 levels of 9 aliases: 9**9 (387 million) strings once expanded, in a few hundred bytes.
ALIAS_BOMB = GOOD + "x-bomb:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"  {b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


def _write(tmp_path: Path, text: str, name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_alias_bomb_is_refused_by_its_expanded_size(tmp_path):
    assert len(ALIAS_BOMB) < 1000
    code, err = cli("validate", str(_write(tmp_path, ALIAS_BOMB)), limit_s=10)
    assert code == 2
    _one_error_line(err, "expands to more than 100000 values (aliases counted as copies)")


def test_small_aliases_still_work(tmp_path):
    text = GOOD.replace("    roles: [compute]", "    roles: &r [compute]") + "  - {name: more, roles: *r, count: 1}\n"
    assert validate_file(_write(tmp_path, text)).ok


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path):
    code, err = cli("validate", str(_write(tmp_path, GOOD + "x: &loop [1, *loop]\n")))
    assert code == 2
    _one_error_line(err, "refers to '&loop' before it is complete")


def test_deep_nesting_just_past_our_limit_is_refused_by_our_walk(tmp_path):
    text = GOOD + "deep: " + "[" * (MAX_YAML_DEPTH + 1) + "]" * (MAX_YAML_DEPTH + 1) + "\n"
    code, err = cli("validate", str(_write(tmp_path, text)), limit_s=10)
    assert code == 2
    _one_error_line(err, f"nests deeper than {MAX_YAML_DEPTH} levels")


@pytest.mark.parametrize("depth", [500, 100_000])
@pytest.mark.parametrize("command", ["validate", "plan", "inventory"])
def test_deep_nesting_is_refused_whichever_layer_sees_it_first(tmp_path, monkeypatch, depth, command):
    """What we promise, whether our event walk or the YAML library's own limit (libyaml refuses past 1,000 levels
    since PyYAML 6.0.3) stops it: exit 2, one error line naming the file, no traceback, nothing written, bounded."""
    spec = _write(tmp_path / "in", GOOD + "deep: " + "[" * depth + "]" * depth + "\n")
    state = tmp_path / "state"
    before = sorted(p.name for p in tmp_path.rglob("*"))
    monkeypatch.setenv("PROVISION_STATE_DIR", str(state))
    extra = ["-o", str(tmp_path / "out")] if command == "inventory" else []
    code, err = cli(command, str(spec), *extra, limit_s=10)
    assert code == 2
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {spec}: "), err
    assert "nest" in errors[0] or "depth" in errors[0], err  # says what is wrong, in our words or the parser's
    assert "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "a refused spec wrote something"


def test_block_nesting_is_refused_too(tmp_path):
    text = GOOD + "".join(f"{'  ' * level}k{level}:\n" for level in range(600)) + "  " * 600 + "v: 1\n"
    code, err = cli("validate", str(_write(tmp_path, text)))
    assert code == 2
    _one_error_line(err, "nests deeper than")


def test_fifo_is_refused_at_once(tmp_path):
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    code, err = cli("validate", str(fifo), limit_s=10)
    assert code == 2
    _one_error_line(err, "is a FIFO, not a regular file")


def test_dev_zero_is_refused_at_once():
    code, err = cli("plan", "/dev/zero", limit_s=10)
    assert code == 2
    _one_error_line(err, "/dev/zero: is a device, not a regular file")


def test_a_file_over_the_size_cap_is_refused(tmp_path):
    path = _write(tmp_path, GOOD + "#" * MAX_SPEC_BYTES + "\n")
    code, err = cli("validate", str(path))
    assert code == 2
    _one_error_line(err, f"a spec is at most {MAX_SPEC_BYTES}")


def test_a_huge_hostlist_is_sized_not_expanded(tmp_path):
    text = GOOD.replace("    count: 3", "    hosts: gpu[1-10000000]")
    code, err = cli("validate", str(_write(tmp_path, text)), limit_s=10)
    assert code == 2
    assert "node_groups[1].hosts (line 10): 'gpu[1-10000000]' stands for 10000000 names; a node group has at most " \
           "10000" in err


def test_the_cluster_node_limit_counts_every_group_before_expanding(tmp_path):
    groups = "".join(f"  - name: g{i}\n    roles: [compute]\n    hosts: g{i}n[1-9000]\n" for i in range(3))
    text = GOOD.split("  - name: compute")[0] + groups
    code, err = cli("validate", str(_write(tmp_path, text)), limit_s=10)
    assert code == 2
    assert "node_groups (line 4): add up to 27001 nodes; a cluster has at most 20000" in err


@pytest.mark.parametrize("group, count", [("{name: g, roles: [compute], count: 1}", 10_000), ("{}", 30_000)])
def test_thousands_of_node_groups_give_one_short_error(tmp_path, group, count):
    """The issue's 30,000 groups took 20-77 s and printed 19.8 MB."""
    text = GOOD + f"  - {group}\n" * count
    code, err = cli("validate", str(_write(tmp_path, text)), limit_s=15)
    assert code == 2
    assert f"error: node_groups (line 4): list is not valid: {count + 2} entries, at most 256 allowed; use fewer " \
           f"entries" in err and len(err) < 1000, err[:3000]


def test_more_values_than_the_limit_are_refused_while_reading(tmp_path):
    code, err = cli("validate", str(_write(tmp_path, GOOD + "x: [" + "1," * 100_001 + "]\n")), limit_s=15)
    assert code == 2
    _one_error_line(err, "expands to more than 100000 values")


def test_duplicate_keys_are_errors_naming_both_lines(tmp_path):
    text = GOOD + "filesystem:\n  type: none\n  mount_point: /a\n  mount_point: /b\n"
    code, err = cli("validate", str(_write(tmp_path, text)))
    assert code == 2
    assert "error: filesystem.mount_point (line 14): is given twice, at lines 13 and 14; keep one" in err


@pytest.mark.parametrize("word", ["yes", "on", "no", "off", "y"])
def test_yaml_1_1_booleans_are_not_silently_booleans(tmp_path, word):
    text = GOOD.replace("    count: 3", f"    count: 3\n    default_partition: {word}")
    rendered = [f.render() for f in validate_file(_write(tmp_path, text)).findings]
    assert any(f"node_groups[1].default_partition (line 11): '{word}' is not valid: not true or false; write true "
               "or false" in line for line in rendered), rendered


def test_yes_is_a_plain_string_where_a_string_is_wanted(tmp_path):
    text = GOOD.replace("    count: 3", "    count: 3\n    partition: on")
    assert validate_file(_write(tmp_path, text)).spec.node_groups[1].partition == "on"


def test_a_second_document_is_refused(tmp_path):
    code, err = cli("validate", str(_write(tmp_path, GOOD + "---\nname: other\n")))
    assert code == 2
    _one_error_line(err, "holds more than one YAML document")


def test_unknown_home_in_key_path_is_a_finding(tmp_path):
    code, err = cli("validate", str(_write(tmp_path, GOOD + "ssh: {key_path: ~nobodyxx/key}\n")))
    assert code == 2
    assert "ssh.key_path (line 11): '~nobodyxx/key' names the home of nobodyxx, which this machine does not know" \
           in err and "Traceback" not in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any directory")
def test_spec_in_an_unreadable_directory_as_a_user(tmp_path):
    locked = tmp_path / "locked"
    path = _write(tmp_path, GOOD, "locked/cluster.yaml")
    locked.chmod(0)
    try:
        code, err = cli("validate", str(path))
    finally:
        locked.chmod(0o700)
    assert code == 2
    _one_error_line(err, "cannot be read (Permission denied)")


def test_spec_in_an_unreadable_directory(tmp_path, monkeypatch):
    """As root the kernel lets every read through, so the refusal is made where it happens: at open()."""
    path = _write(tmp_path, GOOD, "locked/cluster.yaml")
    real_open = os.open

    def denied(target, *args, **kwargs):
        if str(target) == str(path):
            raise PermissionError(13, "Permission denied", str(target))
        return real_open(target, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)
    code, err = cli("plan", str(path))
    assert code == 2
    _one_error_line(err, "cannot be read (Permission denied); check the permissions of the file and of its "
                         "directories")


@pytest.mark.parametrize("name", ["[/x].yaml", "[red]x[/red].yaml", "[bold"])
def test_square_brackets_in_a_file_name_are_printed_as_they_are(tmp_path, name):
    code, err = cli("validate", str(tmp_path / name))
    assert code == 2
    _one_error_line(err, f"{tmp_path / name}: no such file")


def test_square_brackets_in_a_value_are_printed_as_they_are(tmp_path):
    path = _write(tmp_path, "[/x].yaml", "[/x].yaml")
    path.write_text(GOOD.replace("name: demo", 'name: "[/x]"'))
    code, err = cli("validate", str(path))
    assert code == 2
    assert "error: name (line 1): '[/x]' is not valid: does not match '^[a-z][a-z0-9-]{0,30}$'" in err


def test_an_error_line_cuts_a_long_value(tmp_path):
    text = GOOD.replace("name: demo", "name: " + "x" * 4000)
    code, err = cli("validate", str(_write(tmp_path, text)))
    assert code == 2
    line = next(line for line in err.splitlines() if line.startswith("error: name"))
    assert len(line) < 400 and "(4002 characters)" in line


def test_an_over_long_value_is_refused_while_reading(tmp_path):
    with pytest.raises(SpecError, match="line 1 holds a value of 500000 characters; the most is 4096"):
        validate_file(_write(tmp_path, "name: " + "x" * 500_000 + "\n"))


def test_not_utf8_and_nul_path(tmp_path):
    path = tmp_path / "latin1.yaml"
    path.write_bytes(b"name: d\xe9mo\n")
    with pytest.raises(SpecError, match="is not UTF-8 text"):
        validate_file(path)
    code, err = cli("validate", "bad\0name.yaml")
    assert code == 2 and "Traceback" not in err


@pytest.mark.parametrize("name", ["../../etc", "Demo", "demo\nx", "x" * 40, "[/x]"])
def test_init_checks_the_name_like_the_spec_and_writes_nothing(tmp_path, name):
    target = tmp_path / "cluster.yaml"
    code, err = cli("init", "--name", name, "-o", str(target))
    assert code == 2 and not target.exists()
    _one_error_line(err, "is not a cluster name; use lower-case letters, digits and '-'")


def test_init_refuses_a_fifo_as_output(tmp_path):
    fifo = tmp_path / "out.yaml"
    os.mkfifo(fifo)
    code, err = cli("init", "-o", str(fifo), "--force", limit_s=10)
    assert code == 2
    _one_error_line(err, "is not a regular file")
