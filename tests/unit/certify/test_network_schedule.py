"""The network schedule: quick and standard in a constant number of rounds whatever N, every node against distinct
peers, a seed that replays the draw and is in the report; the leave-one-out statistics the judging runs on."""
from __future__ import annotations

import itertools
import random
from dataclasses import replace

import jsonschema
import pytest

from provision.certify.control import schedule
from provision.certify.judging.judge import fleet_stats
from provision.certify.judging.leaveout import LeaveOut
from provision.certify.records import ClusterReport, NetMatrix, NetSampling
from provision.certify.report import heatmap, html, json_report


def names(n):
    return [f"gpu{i:04d}" for i in range(n)]


def peers(plan):
    out = {}
    for a, b in (p for r in plan.rounds for p in r):
        out.setdefault(a, []).append(b)
        out.setdefault(b, []).append(a)
    return out


@pytest.mark.parametrize(("level", "rounds"), [("quick", 4), ("standard", 6)])
def test_quick_and_standard_take_the_same_rounds_at_16_and_at_4000_nodes(level, rounds):
    counts = {n: len(schedule.plan(names(n), level, seed=n).rounds) for n in (16, 64, 256, 1000, 4000)}
    assert set(counts.values()) == {rounds}, counts
    assert {len(schedule.plan(names(n), level, seed=n).rounds) for n in (15, 65, 1001)} == {rounds + 1}  # odd N


@pytest.mark.parametrize("n", [*range(10, 41), 257])
@pytest.mark.parametrize("level", ["quick", "standard"])
def test_every_round_is_disjoint_no_pair_repeats_and_every_node_meets_distinct_peers(n, level):
    for seed in range(5):
        plan = schedule.plan(names(n), level, seed=seed)
        for round_ in plan.rounds:
            ends = [node for pair in round_ for node in pair]
            assert len(ends) == len(set(ends))
        met = [frozenset(p) for r in plan.rounds for p in r]
        assert len(met) == len(set(met)) == plan.pairs
        degree = 2 + schedule.MATCHINGS[level]
        least = {len(set(p)) for p in peers(plan).values()}
        assert min(least) >= (degree if n % 2 == 0 else degree - 1) >= 3 and len(peers(plan)) == n


def test_the_seed_replays_the_draw_and_a_run_without_one_draws_a_fresh_one():
    nodes = names(100)
    assert schedule.plan(nodes, "quick", seed=12345) == schedule.plan(nodes, "quick", seed=12345)
    assert schedule.plan(nodes, "quick", seed=1).rounds != schedule.plan(nodes, "quick", seed=2).rounds
    first, second = schedule.plan(nodes, "quick"), schedule.plan(nodes, "quick")
    assert first.seed is not None and first.seed != second.seed
    assert schedule.plan(nodes, "quick", seed=first.seed) == first


@pytest.mark.parametrize(("n", "level"), [(2, "quick"), (9, "quick"), (13, "standard"), (16, "full"), (11, "full")])
def test_a_few_nodes_and_full_measure_every_pair(n, level):
    plan = schedule.plan(names(n), level)
    met = {frozenset(p) for r in plan.rounds for p in r}
    assert met == {frozenset(p) for p in itertools.combinations(names(n), 2)}
    assert plan.kind == schedule.ALL_PAIRS and plan.seed is None and len(plan.rounds) == n - 1 + n % 2


def test_the_ring_closes_in_two_rounds_for_even_n_and_three_for_odd_n():
    for n in (10, 11):
        rounds = schedule.ring(names(n))
        assert len(rounds) == 2 + n % 2 and sum(map(len, rounds)) == n
        assert frozenset((names(n)[-1], names(n)[0])) in {frozenset(p) for r in rounds for p in r}


@pytest.mark.parametrize("seed", range(20))
def test_leaving_out_a_node_s_values_gives_the_statistics_of_the_rest(seed):
    rng = random.Random(seed)
    values = [round(rng.gauss(100, 5), 0) for _ in range(rng.randint(3, 60))]  # rounded: ties
    fleet = LeaveOut(values)
    for _ in range(20):
        removed = rng.sample(values, rng.randint(0, len(values) - 1))
        rest = list(values)
        for value in removed:
            rest.remove(value)
        assert fleet.stats(removed) == fleet_stats(rest)


def sampled_report(sampling):
    matrix = NetMatrix(("a", "b"), ((None, 1.0), (1.0, None)), "Gb/s", "iperf3", sampling)
    return ClusterReport("c1", "quick", "2026-01-01T00:00:00+00:00", "2026-01-01T00:01:00+00:00", (), (), matrix)


def test_the_report_records_the_seed_in_json_and_html_and_reads_an_old_matrix_without_one():
    record = schedule.plan(names(64), "quick", seed=424242).record()
    assert record == NetSampling("sampled", 424242, 4, 128, 2)
    document = json_report.to_document(sampled_report(record))
    jsonschema.validate(document, json_report.schema())
    assert document["network"]["sampling"]["seed"] == 424242
    assert NetMatrix.from_dict(document["network"]).sampling == record
    page = html.render(sampled_report(record))
    assert 'data-seed="424242"' in page and "2 random matchings, 128" in page
    old = {k: v for k, v in document["network"].items() if k != "sampling"}
    assert NetMatrix.from_dict(old).sampling is None
    everything = replace(record, kind="all pairs", seed=None, matchings=0)
    assert "every pair" in html.render(sampled_report(everything))


def test_a_sampled_matrix_of_a_large_cluster_counts_its_empty_cells_without_listing_them():
    nodes = names(100)
    plan = schedule.plan(nodes, "quick", seed=1)
    measured = {(a, b) for r in plan.rounds for p in r for a, b in (p, p[::-1])}
    values = tuple(tuple(1.0 if (a, b) in measured else None for b in nodes) for a in nodes)
    buckets = heatmap.bucketed(NetMatrix(tuple(nodes), values, "Gb/s", "iperf3", plan.record()))
    assert buckets.unmeasured_count == 100 * 99 - len(measured) and len(buckets.unmeasured) == heatmap.SLOWEST_SHOWN
