"""Hostlist expressions through ClusterShell: expansion order and compression round trips."""
from __future__ import annotations

import pytest
from ClusterShell.NodeSet import RESOLVER_NOGROUP, NodeSet
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


@given(st.lists(st.tuples(st.sampled_from(["gpu", "n", "10.0.0."]), st.integers(0, 120), st.sampled_from([1, 3])),
                max_size=300))
def test_compress_folds_runs_first_and_gives_clustershells_canonical_form(parts):
    """The linear pre-fold (runs of following names) changes the speed, never the expression."""
    names = [f"{prefix}{number:0{width}d}" for prefix, number, width in parts]
    assert hostlist.compress(names) == str(NodeSet.fromlist(names, resolver=RESOLVER_NOGROUP))


def test_a_huge_expression_is_sized_before_anything_is_expanded():
    assert hostlist.count("gpu[1-10000000]") == 10_000_000
    with pytest.raises(SpecError, match=r"'gpu\[1-10000000\]' stands for 10000000 names; at most 10000 are allowed"):
        hostlist.expand("gpu[1-10000000]")
    with pytest.raises(SpecError, match="stands for 1000000000000 names"):
        hostlist.expand("a[1-1000000]b[1-1000000]")


@pytest.mark.parametrize("expression, why", [
    ("@all", "only letters, digits"),  # a ClusterShell group would consult groups.conf (and its commands)
    ("a[1-3]!a2", "only letters, digits"),
    ("a b", "only letters, digits"),
    ("a]1-9[", "unbalanced or nested brackets"),
    ("a[1-[2]]", "unbalanced or nested brackets"),
    ("a[3-1]", "'3-1' is an empty range"),
    ("a[" + "9" * 5000 + "]", "characters long"),
])
def test_expressions_outside_the_plain_syntax_are_refused(expression, why):
    with pytest.raises(SpecError, match=why.replace("[", r"\[")):
        hostlist.expand(expression)


@given(st.from_regex(r"[a-z0-9\-\[\],.]{0,40}", fullmatch=True))
def test_any_expression_is_sized_quickly_and_expands_to_at_most_its_size(expression):
    try:
        size = hostlist.count(expression)
    except hostlist.HostlistError:
        return
    try:
        names = hostlist.expand(expression, limit=5_000)
    except SpecError:
        return
    assert len(names) <= size <= 5_000
