"""A spec's fingerprint: the same cluster gives the same canonical digest however its file is written."""
from __future__ import annotations

import yaml

from provision.spec import digest
from provision.spec.example import example
from provision.spec.loader import load_spec


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_comments_and_layout_do_not_change_the_canonical_digest_but_a_value_does(tmp_path):
    text = example("static", "demo", "cluster.yaml")
    plain = write(tmp_path, "a.yaml", yaml.safe_dump(yaml.safe_load(text), sort_keys=True))
    commented = write(tmp_path, "b.yaml", text)
    changed = write(tmp_path, "c.yaml", text.replace("count: 8", "count: 4"))
    first, second = digest.of_spec(load_spec(plain)), digest.of_spec(load_spec(commented))
    assert first == second and first.startswith("sha256:") and len(first) == len("sha256:") + 64
    assert digest.of_spec(load_spec(changed)) != first
    assert digest.of_file(plain) != digest.of_file(commented)  # the file's bytes do differ
