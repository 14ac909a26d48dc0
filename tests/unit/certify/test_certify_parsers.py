"""Parsers on genuine output samples (tests/fixtures/certify, sources in SOURCES.md)."""
from __future__ import annotations

import json

import pytest

from provision.certify.parsers import ib_write_bw, iperf3, nccl_tests


def read(fixtures_dir, name):
    return (fixtures_dir / name).read_text()


# ---- nccl-tests ----------------------------------------------------------------------------------

def test_nccl_current_layout_two_nodes(fixtures_dir):
    run = nccl_tests.parse(read(fixtures_dir, "nccl_allreduce_h100_2node.txt"))
    assert len(run.rows) == 31 and len(run.ranks) == 16
    assert run.hosts == ("ztan-mig-235z", "ztan-mig-gq73")
    assert run.ranks[15].device == 7 and run.ranks[0].name == "NVIDIA H100 80GB HBM3"
    assert run.largest.size_bytes == 8 * 1024**3 and run.busbw_at_largest() == 338.82
    assert run.largest.in_place.busbw == 337.35 and run.largest.root == -1
    assert run.avg_busbw == 70.742 and run.out_of_bounds == 0 and run.wrong == 0


def test_nccl_busbw_is_algbw_times_2_n_minus_1_over_n(fixtures_dir):
    run = nccl_tests.parse(read(fixtures_dir, "nccl_allreduce_h100_2node.txt"))
    n = len(run.ranks)
    for row in run.rows[-8:]:  # large sizes: two printed decimals are precise enough
        assert row.out_of_place.busbw == pytest.approx(row.out_of_place.algbw * 2 * (n - 1) / n, rel=0.01)


def test_nccl_old_layout_with_error_column(fixtures_dir):
    run = nccl_tests.parse(read(fixtures_dir, "nccl_allreduce_dgx_a100_4node_old_format.txt"))
    assert len(run.rows) == 13 and run.ranks == ()
    assert run.rows[0].root is None and run.rows[0].out_of_place.max_error == pytest.approx(7e-07)
    assert run.rows[0].out_of_place.wrong is None and run.wrong == 0
    assert run.largest.size_bytes == 4 * 1024**3 and run.busbw_at_largest() == 191.05
    assert run.avg_busbw == 113.289


def test_nccl_prefixed_lines_from_mpirun_and_srun_label(fixtures_dir):
    text = read(fixtures_dir, "nccl_allreduce_h100_2node.txt")
    for prefix in ("[1,0]<stdout>:", "0: "):
        run = nccl_tests.parse("\n".join(prefix + line for line in text.splitlines()))
        assert len(run.rows) == 31 and run.busbw_at_largest() == 338.82 and len(run.ranks) == 16


def test_nccl_output_cut_before_the_table_is_an_error(fixtures_dir):
    text = read(fixtures_dir, "nccl_allreduce_h100_2node.txt")
    cut = text[: text.index("           8             2")]
    with pytest.raises(ValueError, match="no nccl-tests result rows"):
        nccl_tests.parse(cut)


def test_nccl_wrong_results_are_counted(fixtures_dir):
    text = read(fixtures_dir, "nccl_allreduce_h100_2node.txt")
    damaged = text.replace("338.82      0", "338.82      3")  # one corrupted row, as nccl-tests reports it
    assert nccl_tests.parse(damaged).wrong == 3


# ---- ib_write_bw ---------------------------------------------------------------------------------

def test_ib_write_bw_gbits_with_four_qps(fixtures_dir):
    result = ib_write_bw.parse(read(fixtures_dir, "ib_write_bw_4qp_gbits.txt"))
    assert (result.device, result.qps, result.link_type, result.unit_reported) == ("mlx5_5", 4, "Ethernet", "Gb/sec")
    assert result.average_gbps == 98.01 and result.rows[0].size_bytes == 65536 and result.rows[0].iterations == 20000


def test_ib_write_bw_skips_cpu_frequency_warning_inside_the_table(fixtures_dir):
    result = ib_write_bw.parse(read(fixtures_dir, "ib_write_bw_cpufreq_warning.txt"))
    assert len(result.rows) == 1 and result.average_gbps == pytest.approx(92.40) and result.device == "mlx5_0"


def test_ib_write_bw_post_list_small_messages(fixtures_dir):
    result = ib_write_bw.parse(read(fixtures_dir, "ib_write_bw_post_list_gbits.txt"))
    assert result.rows[0].size_bytes == 8 and result.average_gbps == pytest.approx(0.48)


def test_perftest_mb_sec_is_mebibytes_converted_to_gigabits(fixtures_dir):
    result = ib_write_bw.parse(read(fixtures_dir, "ib_send_bw_mb_sec.txt"))
    assert result.unit_reported == "MB/sec"
    assert result.average_gbps == pytest.approx(920.13 * 1048576 * 8 / 1e9)


@pytest.mark.parametrize("name", ["ib_write_bw_4qp_gbits.txt", "ib_write_bw_cpufreq_warning.txt",
                                  "ib_write_bw_post_list_gbits.txt", "ib_send_bw_mb_sec.txt"])
def test_ib_bandwidth_agrees_with_message_rate_times_size(fixtures_dir, name):
    # perftest prints the message rate independently: rate (Mpps) x size x 8 must give the Gb/s we derived,
    # which proves the MB/sec = MiB/s reading (a 10^6 reading would be 4.9 % off)
    row = ib_write_bw.parse(read(fixtures_dir, name)).rows[0]
    assert row.average_gbps == pytest.approx(row.msg_rate_mpps * 1e6 * row.size_bytes * 8 / 1e9, rel=0.01)


def test_ib_write_bw_server_side_waiting_has_no_table(fixtures_dir):
    text = read(fixtures_dir, "ib_write_bw_4qp_gbits.txt")
    with pytest.raises(ValueError, match="no perftest bandwidth table"):
        ib_write_bw.parse(text[: text.index(" #bytes")])


# ---- iperf3 --------------------------------------------------------------------------------------

def test_iperf3_json_single_stream(fixtures_dir):
    result = iperf3.parse(read(fixtures_dir, "iperf3_tcp_1stream.json"))
    assert result.received_gbps == pytest.approx(1.7066463622936916)
    assert result.sent_gbps == pytest.approx(1.7070981161419148)
    assert result.retransmits == 540 and result.streams == 1 and result.seconds == pytest.approx(10.002443)


def test_iperf3_json_parallel_streams_uses_the_sum(fixtures_dir):
    text = read(fixtures_dir, "iperf3_loopback_2streams.json")
    doc = json.loads(text)
    result = iperf3.parse(text)
    assert result.streams == 2
    assert result.received_gbps == pytest.approx(doc["end"]["sum_received"]["bits_per_second"] / 1e9)
    per_stream = [s["receiver"]["bits_per_second"] for s in doc["end"]["streams"]]
    assert result.received_gbps == pytest.approx(sum(per_stream) / 1e9, rel=1e-3)


def test_iperf3_text_summary(fixtures_dir):
    result = iperf3.parse(read(fixtures_dir, "iperf3_summary_sender_receiver.txt"))
    assert result.received_gbps == pytest.approx(0.508) and result.retransmits == 128 and result.streams == 1


def test_iperf3_text_without_space_before_sec(fixtures_dir):
    result = iperf3.parse(read(fixtures_dir, "iperf3_summary_no_space_before_sec.txt"))
    assert result.received_gbps == pytest.approx(8.103) and result.sent_gbps == pytest.approx(8.114)


def test_iperf3_text_parallel_prefers_sum_lines(fixtures_dir):
    text = read(fixtures_dir, "iperf3_loopback_4streams.txt")
    result = iperf3.parse(text)
    sum_receiver = next(l for l in text.splitlines() if l.startswith("[SUM]") and l.rstrip().endswith("receiver"))
    assert result.streams == 4
    assert result.received_gbps == pytest.approx(float(sum_receiver.split()[5]))


def test_iperf3_json_cut_short_is_an_error(fixtures_dir):
    doc = json.loads(read(fixtures_dir, "iperf3_tcp_1stream.json"))
    del doc["end"]
    with pytest.raises(ValueError, match="sum_received"):
        iperf3.parse(json.dumps(doc))


def test_iperf3_text_cut_before_summary_is_an_error(fixtures_dir):
    text = read(fixtures_dir, "iperf3_loopback_4streams.txt")
    with pytest.raises(ValueError, match="receiver summary"):
        iperf3.parse(text[: text.index("- - - -")])
