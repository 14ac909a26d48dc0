"""`provision schema`: a valid JSON Schema (draft 2020-12) that every example spec satisfies and that catches the
structural mistakes `validate` catches (unknown keys, wrong kinds)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from provision.providers import registry
from provision.spec.example import example
from provision.spec.reader import parse_yaml
from provision.spec.schema import json_schema

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((REPO / "inventories").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)  # the schema itself is valid
    return jsonschema.Draft202012Validator(schema)


def _data(text: str) -> dict:
    return parse_yaml(text, "spec")[0]  # as the tool reads a spec: core-schema YAML scalars


def test_the_examples_are_there():
    assert {p.stem for p in EXAMPLES} >= {"sandbox", "onprem", "aws"}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_every_example_spec_validates(validator, path):
    assert list(validator.iter_errors(_data(path.read_text()))) == []


@pytest.mark.parametrize("provider", registry.names())
def test_what_init_writes_validates(validator, provider):
    assert list(validator.iter_errors(_data(example(provider, "demo", "cluster.yaml")))) == []


@pytest.mark.parametrize("change, where", [
    (lambda d: d["ssh"].update(usr="admin"), "ssh"),  # an unknown key
    (lambda d: d.update(certify={"level": "thorough"}), "certify.level"),  # not one of the levels
    (lambda d: d["node_groups"][0].update(count="three"), "node_groups.0.count"),
    (lambda d: d["provider"].update(type="gcp"), "provider"),
    (lambda d: d.pop("node_groups"), ""),
])
def test_structural_mistakes_fail_the_schema(validator, change, where):
    data = _data(example("static", "demo", "cluster.yaml"))
    data.setdefault("ssh", {})
    change(data)
    found = [".".join(str(p) for p in e.absolute_path) for e in validator.iter_errors(data)]
    assert where in found


def test_the_command_prints_only_the_schema_or_writes_it(tmp_path):
    done = subprocess.run([sys.executable, "-m", "provision", "schema"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == json_schema()
    target = tmp_path / "cluster.schema.json"
    written = subprocess.run([sys.executable, "-m", "provision", "schema", "-o", str(target)], capture_output=True,
                             text=True, timeout=60)
    assert written.returncode == 0 and written.stdout == "" and json.loads(target.read_text()) == json_schema()
