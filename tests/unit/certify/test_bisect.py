"""Bisection names the pair at fault in O(log N) subsets, for every pair position; a failure that does not repeat
counts as a pass; a fault of three nodes is reported as not localised, with the smallest failing set."""
from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings, strategies as st

from provision.certify.control.bisect import bisect, split


def names(count: int) -> tuple[str, ...]:
    return tuple(f"n{i:02d}" for i in range(1, count + 1))


class Job:
    """The job on a subset fails when the subset holds every node of `fault`; `flaky` subsets fail on their first
    launch whatever they hold (the start-up race). Every launch is logged."""

    def __init__(self, fault, flaky=()):
        self.fault, self.flaky, self.log = set(fault), {frozenset(f) for f in flaky}, []

    def __call__(self, nodes):
        self.log.append(nodes)
        if frozenset(nodes) in self.flaky and self.log.count(nodes) == 1:
            return "Segmentation fault"
        return "2 of 4 ranks" if self.fault <= set(nodes) else None


def bound(count: int) -> int:
    return 2 * math.ceil(math.log2(count)) + 1


@pytest.mark.parametrize("count", [8, 16])
def test_every_pair_of_8_and_16_nodes_is_found_within_the_bound(count):
    nodes = names(count)
    for pair in itertools.combinations(nodes, 2):
        job = Job(pair)
        found = bisect(nodes, job)
        assert found.localised and found.culprit == pair, (pair, found)
        assert len(found.path) <= bound(count) <= 2 * math.log2(count) + 2, (pair, len(found.path))
        assert found.jobs == len(job.log) == len(found.path) + sum(t.failed for t in found.path)
        assert any(t.failed and set(t.nodes) == set(pair) for t in found.path)  # the pair itself failed alone


@settings(max_examples=300, deadline=None)
@given(st.integers(3, 64).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n - 1), min_size=2,
                                                                                max_size=2, unique=True))))
def test_any_pair_of_any_node_count_is_found_within_the_bound(case):
    count, where = case
    nodes = names(count)
    pair = tuple(nodes[i] for i in sorted(where))
    found = bisect(nodes, Job(pair))
    assert found.localised and found.culprit == pair
    assert len(found.path) <= bound(count)
    assert all(len(t.nodes) >= 2 for t in found.path)  # a node alone is known to pass: never run again


def test_the_path_of_a_pair_across_the_halves_of_eight():
    nodes = names(8)
    found = bisect(nodes, Job(("n03", "n06")))
    assert [(t.nodes, t.purpose, t.failed) for t in found.path] == [
        (nodes[:4], "half", False), (nodes[4:], "half", False),
        (("n01", "n02", *nodes[4:]), "across", False), (("n03", *nodes[4:]), "across", True),
        (("n05", "n06", "n03"), "across", True), (("n05", "n03"), "across", False),
        (("n03", "n06"), "pair", True)]
    assert found.jobs == 10 and found.path[-1].outcome == "fail (2 of 4 ranks)"


def test_halves_that_both_run_may_run_at_the_same_time_with_the_same_result():
    nodes = names(8)
    assert bisect(nodes, Job(("n02", "n07")), concurrent=True) == bisect(nodes, Job(("n02", "n07")))


def test_a_failure_that_does_not_repeat_counts_as_a_pass_and_the_pair_is_still_found():
    nodes = names(8)
    job = Job(("n03", "n06"), flaky=[nodes[:4], ("n01", "n02", *nodes[4:])])
    found = bisect(nodes, job)
    assert found.localised and found.culprit == ("n03", "n06")
    first = found.path[0]
    assert not first.failed and first.launches == 2 and first.outcome.startswith("pass (the first launch failed")


def test_a_fault_in_one_half_is_searched_inside_that_half_only():
    nodes = names(8)
    found = bisect(nodes, Job(("n05", "n06")))
    assert found.culprit == ("n05", "n06") and len(found.path) == 4
    assert all(set(t.nodes) <= set(nodes[4:]) for t in found.path[2:])


@pytest.mark.parametrize("fault, smallest", [
    (("n01", "n02", "n07"), ("n01", "n02", "n05", "n06", "n07", "n08")),  # the smallest subset that failed
    (("n01", "n04", "n07"), tuple(f"n{i:02d}" for i in range(1, 9))),  # no subset failed: the whole set
])
def test_a_fault_that_needs_three_nodes_is_not_localised_and_names_the_smallest_failing_set(fault, smallest):
    found = bisect(names(8), Job(fault))
    assert not found.localised and found.culprit == smallest
    assert found.path[-1].purpose == "pair" and not found.path[-1].failed  # the pair it narrowed to passes alone


def test_three_nodes_split_into_a_pair_and_a_node_known_to_pass():
    assert split(names(3)) == (("n01", "n02"), ("n03",))
    job = Job(("n01", "n03"))
    found = bisect(names(3), job)
    assert found.culprit == ("n01", "n03") and job.log[0] == ("n01", "n02")
