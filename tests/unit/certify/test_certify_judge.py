"""Two-sided judgement: absolute floor and fleet-relative robust z-score."""
from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from provision.certify.judging.judge import Sample, fleet_stats, judge
from provision.certify.judging.thresholds import Threshold

FLOOR = Threshold("gpu.gemm_bf16", "H100-SXM", 675.3, "TFLOP/s", 794.5, "test source", "test derivation")


def samples(values, floor=FLOOR, group="H100-SXM"):
    return [Sample("gpu.gemm_bf16", f"n{i}", v, "TFLOP/s", group, f"gpu{i}", floor) for i, v in enumerate(values)]


def verdicts(values, floor=FLOOR):
    return [r.verdict for r in judge(samples(values, floor))]


def test_value_below_floor_fails_with_floor_and_source():
    result = judge(samples([790, 792, 600, 791]))[2]
    assert result.verdict == "fail" and result.threshold == 675.3 and result.source == "test source"
    assert "below the floor" in result.detail


def test_outlier_above_floor_is_flagged_by_the_fleet():
    # 720 clears the 675.3 floor by far, but sits 9 % under eight peers at ~792
    values = [792, 791, 793, 792, 790, 794, 791, 792, 720]
    got = verdicts(values)
    assert got[:-1] == ["pass"] * 8 and got[-1] == "warn"
    assert "fleet outlier" in judge(samples(values))[-1].detail


def test_severe_outlier_above_floor_fails():
    values = [792, 791, 793, 792, 790, 794, 791, 792, 700]
    assert verdicts(values)[-1] == "fail"


def test_uniform_fleet_passes():
    assert verdicts([792.0, 791.5, 792.4, 790.9, 793.1]) == ["pass"] * 5


def test_a_fleet_that_agrees_to_the_third_decimal_needs_the_drop_bands_not_a_few_percent():
    # identical GPUs: MAD 0.1 TFLOP/s, so without the spread's floor (2 % of the median) 4 % would be z of -200
    peers = [792.0, 792.1, 791.9, 792.0, 792.1, 791.9, 792.0]
    assert verdicts([*peers, 792.0 * 0.96], None)[-1] == "pass"  # 4 %: z -2 against the 2 % floor
    assert verdicts([*peers, 792.0 * 0.92], None)[-1] == "warn"  # 8 %: z -4, past the 5 % warn band
    assert verdicts([*peers, 792.0 * 0.88], None)[-1] == "fail"  # 12 %: z -6, past the 10 % fail band


def test_value_just_above_floor_warns():
    assert verdicts([700.0], FLOOR) == ["warn"]  # within 5 % of 675.3


def test_two_samples_get_no_fleet_test():
    assert verdicts([792, 700], None) == ["pass", "pass"]


def test_groups_are_judged_separately():
    a = samples([792, 791, 793], group="H100-SXM")
    b = [Sample("gpu.gemm_bf16", f"m{i}", v, "TFLOP/s", "A100-SXM-80GB", None, None)
         for i, v in enumerate([265, 266, 264])]
    assert [r.verdict for r in judge(a + b)] == ["pass"] * 6


def test_fleet_stats_median_and_mad():
    stats = fleet_stats([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stats.median == 3.0 and stats.mad == 1.0 and stats.n == 5


fleet = st.lists(st.floats(min_value=780, max_value=800), min_size=5, max_size=40)


@settings(max_examples=60, deadline=None)
@given(fleet)
def test_property_a_fleet_within_three_percent_above_the_floor_all_passes(values):
    assert set(verdicts(values)) == {"pass"}


@settings(max_examples=60, deadline=None)
@given(fleet, st.floats(min_value=0, max_value=675.2))
def test_property_anything_below_the_floor_fails_whatever_the_fleet(values, low):
    assert verdicts(values + [low])[-1] == "fail"


@settings(max_examples=60, deadline=None)
@example(values=[780.0, 780.0, 780.0, 795.0, 795.0, 795.0], drop=0.15625)  # once drew a fleet median under 15 %
@given(fleet, st.floats(min_value=0.15, max_value=0.14999 + 0.1))
def test_property_a_large_drop_is_flagged_even_without_a_floor(values, drop):
    # 15 % or more below every other node: then also below the fleet's median, which counts the outlier itself (a
    # drop taken from the median of the others alone can end under 15 % of the median with it: 780/795 x 3 fleets).
    result = judge(samples(values + [min(values) * (1 - drop)], floor=None))[-1]
    assert result.verdict == "fail" and "fleet outlier" in result.detail


def test_a_floor_derived_for_this_run_shows_its_derivation_and_a_table_floor_does_not():
    from provision.certify.judging import thresholds
    table_floor = thresholds.find("gpu.gemm_bf16", "H100-SXM")
    scaled = thresholds.pcie_floor("gpu.h2d_bw", 5, 8)  # x8 link: derived here, not in the table
    plain = judge([Sample("gpu.gemm_bf16", "n1", 790.0, "TFLOP/s", "H100-SXM", "gpu0", table_floor)])[0]
    derived = judge([Sample("gpu.h2d_bw", "n1", 27.0, "GB/s", "H100-SXM", "gpu0", scaled)])[0]
    assert "floor" not in plain.detail
    assert derived.detail == f"floor {scaled.value:g} GB/s = {scaled.derivation}" and "x8 link" in derived.detail
