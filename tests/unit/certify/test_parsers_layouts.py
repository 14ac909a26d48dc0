"""Layouts the tools can print that no public sample in the corpus shows, written the way the tools'
format strings write them (nccl-tests src/util.cu, perftest perftest_parameters.h), and the error the
parsers raise."""
from __future__ import annotations

import pytest

from provision.certify.judging import nccl
from provision.certify.parsers import ib_write_bw, nccl_tests
from provision.certify.probe.parse_errors import MAX_QUOTE, ParseError, quote

HEADER = ("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw"
          "   busbw  #wrong")
ROW = ("  8589934592    2147483648     float     sum      -1    43980  195.31  386.56       0    44094  194.81"
       "  385.56       0")
FABRIC = nccl.Fabric("H100-SXM", 8, "infiniband", 8, 400.0)


def test_per_iteration_timing_columns_are_read_through_the_header():
    header = ("#        size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max"
              "    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%")
    row = ("  8589934592    2147483648     float     sum      -1    43980  195.31  386.56       0  43870.1  44102.9"
           "  44090.0     0.12    44094  194.81  385.56       3  43990.2  44230.4  44201.7     0.15")
    run = nccl_tests.parse(f"{header}\n{row}\n")
    assert run.busbw_at_largest() == 386.56 and run.largest.in_place.busbw == 385.56 and run.wrong == 3


def test_a_trailing_timestamp_column_is_ignored():
    run = nccl_tests.parse(f"{HEADER}  timestamp\n{ROW}  2025-06-01 10:42:07\n")
    assert run.busbw_at_largest() == 386.56 and run.largest.in_place.wrong == 0


def test_hydra_labels_inside_a_row_are_removed():
    row = ROW.replace("   44094", "[3]    44094")
    run = nccl_tests.parse(f"[3] {HEADER}\n[3] {row}\n")
    assert run.largest.in_place.time_us == 44094 and run.busbw_at_largest() == 386.56


def test_separate_runs_of_a_non_mpi_build_fail_the_cluster_check():
    one = f"# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592\n{HEADER}\n{ROW}\n"
    run = nccl_tests.parse(one + one)
    assert run.separate_runs == 2
    (check,) = nccl.judge_jobs([nccl.NcclJob("cluster", ("a", "b", "c"), output=one + one)], FABRIC)
    assert check.verdict == "fail" and "2 separate all_reduce_perf runs" in check.detail


def test_perftest_qos_table_has_a_service_level_column():
    text = (" #bytes    #sl      #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
            " 65536      3           5000           390.12            389.87                  0.743610\n")
    run = ib_write_bw.parse(text)
    assert (run.largest.size_bytes, run.largest.iterations, run.average_gbps) == (65536, 5000, 389.87)


def test_perftest_in_an_unknown_unit_is_refused_with_its_header():
    with pytest.raises(ParseError, match=r"'KB/sec'.*first unparseable line: ' ?#bytes"):
        ib_write_bw.parse(" #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]   MsgRate[Mpps]\n")


def test_a_parse_error_is_a_value_error_quoting_one_readable_line():
    with pytest.raises(ValueError) as caught:
        nccl_tests.parse("\x00\x01binary\x7f" + "z" * 500 + "\nsecond line\n")
    message = str(caught.value)
    assert isinstance(caught.value, ParseError) and "second line" not in message
    assert "'\\x00\\x01binary\\x7f" in message and message.endswith("...'")


def test_quote_trims_and_bounds_a_line():
    assert quote("   value\t ") == "'value'"
    assert len(quote("y" * 1000)) == MAX_QUOTE + 5  # two quotes and the ellipsis
