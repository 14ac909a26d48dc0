"""The PromQL metric-name extractor the rule and dashboard tests check names with."""
from __future__ import annotations

import pytest
from promql_names import metric_names

CASES = [
    ("up", {"up"}),
    ('up{job="node"} == 0', {"up"}),
    ('node_cpu_seconds_total{mode!="idle", node=~"$node"}', {"node_cpu_seconds_total"}),
    ("rate(node_network_receive_bytes_total[5m])", {"node_network_receive_bytes_total"}),
    ("rate(node_network_receive_bytes_total[$__rate_interval])", {"node_network_receive_bytes_total"}),
    ("max_over_time(node_load1[1h:5m])", {"node_load1"}),
    ("sum by (node, state) (slurm_node_state)", {"slurm_node_state"}),
    ("sum(slurm_jobs) without (user, account)", {"slurm_jobs"}),
    ("count_values by (node) (\"xid\", DCGM_FI_DEV_XID_ERRORS)", {"DCGM_FI_DEV_XID_ERRORS"}),
    ("slurm_node_cpus{status=\"allocated\"} / on(node) group_left slurm_node_cpus{status=\"total\"}",
     {"slurm_node_cpus"}),
    ("a * ignoring(status) group_right(node) b", {"a", "b"}),
    ("time() - gpu_provision_health_last_pass_timestamp_seconds > 900",
     {"gpu_provision_health_last_pass_timestamp_seconds"}),
    ("slurm_controller_up == 0 or absent(slurm_controller_up)", {"slurm_controller_up"}),
    ("floor(DCGM_FI_DEV_CLOCK_THROTTLE_REASONS / 0x40) % 2 == 1", {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}),
    ("node_load1 offset 1h", {"node_load1"}),
    ("x unless y and bool_metric", {"x", "y", "bool_metric"}),
    ('slurm_node_drained{reason=~`hc:.*\\(gpu-provision-health\\)`} == 1', {"slurm_node_drained"}),
    ("slurm_node_drained{reason=\"by (node) sum(x) {y}\"}", {"slurm_node_drained"}),
    ("label_replace(up, \"host\", \"$1\", \"instance\", \"(.*):.*\")", {"up"}),
    ('{__name__="node_time_seconds", node="$node"}', {"node_time_seconds"}),
    ("histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))", {"x_bucket"}),
    ("topk(5, sum by (user) (slurm_jobs{state=\"running\"}))", {"slurm_jobs"}),
    ("1e3 * up  # a comment naming not_a_metric", {"up"}),
    ("node_memory_MemTotal_bytes{node=\"${node}\"} - node_memory_MemAvailable_bytes{node=\"[[node]]\"}",
     {"node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes"}),
    ("SUM BY (node) (up) AND ON (node) node_load1", {"up", "node_load1"}),
    ("vector(1)", set()),
]


@pytest.mark.parametrize(("expr", "names"), CASES, ids=[c[0][:40] for c in CASES])
def test_names_of_an_expression(expr, names):
    assert metric_names(expr) == names
