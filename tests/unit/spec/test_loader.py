"""Structure errors: YAML syntax with position, wrong types, unknown keys with suggestions, bad paths."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import SpecError
from provision.spec import wording
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


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    return path


def _rendered(tmp_path: Path, text: str) -> list[str]:
    return [f.render() for f in validate_file(_write(tmp_path, text)).findings]


def test_good_spec_is_valid(tmp_path):
    assert validate_file(_write(tmp_path, GOOD)).ok


@pytest.mark.parametrize("text, expected", [
    (GOOD.replace("    count: 3", "    count: three"),
     "error: node_groups[1].count (line 10): 'three' is not valid: not a whole number; write a whole number such as 4"),
    (GOOD.replace("  type: sandbox", "  type: sandbox\n  subnett: 10.99.0.0/24"),
     "error: provider.subnett (line 4): unknown key 'subnett'; did you mean 'subnet'?"),
    (GOOD.replace("    roles: [compute]", "    role: [compute]"),
     "error: node_groups[1].role (line 9): unknown key 'role'; did you mean 'roles'?"),
    (GOOD + "softwear: {}\n",
     "error: softwear (line 11): unknown key 'softwear'; did you mean 'software'?"),
    (GOOD + "zzz: 1\n",
     "error: zzz (line 11): unknown key 'zzz'; known keys here: accounting, certify, directory, "
     "filesystem, health, homes, monitoring, name, node_groups, provider, software, ssh, state_dir, users"),
    (GOOD.replace("name: demo\n", ""),
     "error: name: is required but missing; add 'name'"),
    (GOOD.replace("  type: sandbox", "  type: openstack"),
     "error: provider (line 2): provider type 'openstack' is not known; use one of: sandbox, static, aws"),
    (GOOD.replace("    roles: [controller]", "    roles: [boss]"),
     "error: node_groups[0].roles[0] (line 6): 'boss' is not valid: not one of 'controller', 'login', "
     "'compute', 'storage' or 'monitoring'; use one of 'controller', 'login', 'compute', 'storage' or 'monitoring'"),
    (GOOD + "certify: {level: extreme}\n",
     "error: certify.level (line 11): 'extreme' is not valid: not one of 'quick', 'standard' or 'full'; "
     "use one of 'quick', 'standard' or 'full'"),
    (GOOD.replace("name: demo", "name: Demo_Cluster"),
     "error: name (line 1): 'Demo_Cluster' is not valid: does not match '^[a-z][a-z0-9-]{0,30}$'; "
     "use lower-case letters, digits and '-', starting with a letter"),
])
def test_structure_error_names_field_line_value_and_fix(tmp_path, text, expected):
    assert expected in _rendered(tmp_path, text)


def test_every_structure_error_is_reported_at_once(tmp_path):
    text = GOOD.replace("    count: 3", "    count: x").replace("  type: sandbox", "  type: sandbox\n  foo: 1")
    assert len(_rendered(tmp_path, text)) == 2


@pytest.mark.parametrize("text, expected", [
    ("name: [demo\n", "YAML syntax error at line 2, column 1"),
    ("name: demo\n  bad: indent\n", "YAML syntax error at line 2, column 6"),
    ("", "is empty"),
    ("   \n", "is empty"),
    ("- a\n- b\n", "the top level must be a mapping"),
])
def test_unusable_file_raises_one_clear_error(tmp_path, text, expected):
    with pytest.raises(SpecError) as caught:
        validate_file(_write(tmp_path, text))
    assert expected in str(caught.value)


def test_missing_path_and_directory(tmp_path):
    with pytest.raises(SpecError, match="no such file"):
        validate_file(tmp_path / "absent.yaml")
    with pytest.raises(SpecError, match="is a directory"):
        validate_file(tmp_path)


@pytest.mark.parametrize("error, expected", [
    ({"type": "too_long", "ctx": {"max_length": 256, "actual_length": 300}, "msg": "x"}, "300 entries, at most 256 allowed"),
    ({"type": "too_long", "ctx": {"max_length": 2, "actual_length": None}, "msg": "x"}, "at most 2 allowed"),
    ({"type": "too_short", "ctx": {"min_length": 1, "actual_length": 0}, "msg": "x"}, "0 entries, at least 1 needed"),
    ({"type": "greater_than_equal", "ctx": {"ge": 1}, "msg": "x"}, "must be 1 or more"),
    ({"type": "int_parsing", "msg": "Input should be a valid integer, unable to parse"}, "not a whole number"),
    ({"type": "value_error", "msg": "Value error, Names a node twice"}, "names a node twice"),
    ({"type": "some_future_type", "msg": "Something New"}, "something New"),
    ({"type": "too_long", "ctx": {}, "msg": "List too long"}, "list too long"),  # no limit named: theirs
])
def test_our_words_for_pydantic_error_types_and_its_message_for_the_rest(error, expected):
    assert wording.message(error) == expected


def test_every_error_type_the_model_raises_for_bad_input_is_worded_by_us(tmp_path):
    """The structural errors a user meets most (wrong type, out of range, too many, wrong word) never show pydantic's
    sentence; a new pydantic release cannot change what they read."""
    bad = GOOD.replace("    count: 3", "    count: -1\n    default_partition: maybe").replace("name: demo", "name: D")
    rendered = " | ".join(f.render() for f in validate_file(_write(tmp_path, bad)).findings)
    assert "Input should" not in rendered and "input should" not in rendered and "should" not in rendered, rendered
