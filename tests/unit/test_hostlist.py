"""Hostlist expressions through ClusterShell: expansion order and compression round trips."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from provision import hostlist
from provision.errors import SpecError


def test_expand_keeps_written_order():
    assert hostlist.expand("b[1-2],a1") == ["b1", "b2", "a1"]
    assert hostlist.expand("10.0.0.[11-13]") == ["10.0.0.11", "10.0.0.12", "10.0.0.13"]
    assert hostlist.expand("gpu[01-03]") == ["gpu01", "gpu02", "gpu03"]


def test_bad_expression_is_a_spec_error():
    with pytest.raises(SpecError, match="not a valid hostlist expression"):
        hostlist.expand("gpu[01-")


@given(st.lists(st.tuples(st.sampled_from(["gpu", "cpu", "node-a"]), st.integers(0, 5000)), min_size=1,
                max_size=200, unique=True))
def test_compress_then_expand_gives_the_same_names(pairs):
    names = [f"{prefix}{number:04d}" for prefix, number in pairs]
    assert sorted(hostlist.expand(hostlist.compress(names))) == sorted(set(names))
