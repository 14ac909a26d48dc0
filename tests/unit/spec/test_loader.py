"""Structure errors: YAML syntax with position, wrong types, unknown keys with suggestions, bad paths."""
from __future__ import annotations

from pathlib import Path

import pytest

from provision.errors import SpecError
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
     "error: node_groups[1].count (line 10): 'three' is not valid: input should be a valid integer, unable to parse "
     "string as an integer; write a whole number such as 4"),
    (GOOD.replace("  type: sandbox", "  type: sandbox\n  subnett: 10.99.0.0/24"),
     "error: provider.subnett (line 4): unknown key 'subnett'; did you mean 'subnet'?"),
    (GOOD.replace("    roles: [compute]", "    role: [compute]"),
     "error: node_groups[1].role (line 9): unknown key 'role'; did you mean 'roles'?"),
    (GOOD + "softwear: {}\n",
     "error: softwear (line 11): unknown key 'softwear'; did you mean 'software'?"),
    (GOOD + "zzz: 1\n",
     "error: zzz (line 11): unknown key 'zzz'; known keys here: certify, filesystem, health, name, node_groups, provider, "
     "software, ssh, state_dir"),
    (GOOD.replace("name: demo\n", ""),
     "error: name: is required but missing; add 'name'"),
    (GOOD.replace("  type: sandbox", "  type: openstack"),
     "error: provider (line 2): provider type 'openstack' is not known; use one of: sandbox, static, aws"),
    (GOOD.replace("    roles: [controller]", "    roles: [boss]"),
     "error: node_groups[0].roles[0] (line 6): 'boss' is not valid: input should be 'controller', 'login', "
     "'compute' or 'storage'; use one of 'controller', 'login', 'compute' or 'storage'"),
    (GOOD + "certify: {level: extreme}\n",
     "error: certify.level (line 11): 'extreme' is not valid: input should be 'quick', 'standard' or 'full'; "
     "use one of 'quick', 'standard' or 'full'"),
    (GOOD.replace("name: demo", "name: Demo_Cluster"),
     "error: name (line 1): 'Demo_Cluster' is not valid: string should match pattern '^[a-z][a-z0-9-]{0,30}$'; "
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
