"""The index of a cluster's certify runs: every run folder newest first, links, escaping, trend lines."""
from __future__ import annotations

import re
from dataclasses import replace

from test_certify_report import sample_report

from provision.certify.probe.records import CheckResult
from provision.certify.records import ClusterReport, NodeResult
from provision.certify.report import index, json_report, runs, write_reports, write_to_state
from provision.state import ClusterState

HOSTILE = '<script>alert("x")</script>&"'
# (folder, started, finished, GEMM offset): written oldest first, expected newest first
RUNS = (("20260101T000000Z-standard", "2026-01-01T00:00:00+00:00", "2026-01-01T00:10:00+00:00", 0.0),
        ("20260102T000000Z-quick", "2026-01-02T00:00:00+00:00", "2026-01-02T00:01:30+00:00", 10.0),
        ("20260103T000000Z-full", "2026-01-03T00:00:00+00:00", "2026-01-03T02:00:00+00:00", -20.0))


def shifted(report: ClusterReport, offset: float) -> ClusterReport:
    """The sample report with every GEMM value moved by `offset` TFLOP/s."""
    def move(check: CheckResult) -> CheckResult:
        return replace(check, value=check.value + offset) if check.check == "gpu.gemm_bf16" else check
    nodes = tuple(NodeResult(n.name, tuple(move(c) for c in n.checks), n.gpu_model) for n in report.nodes)
    return replace(report, nodes=nodes)


def write_runs(reports):
    base = sample_report()
    for folder, started, finished, offset in RUNS:
        level = folder.rsplit("-", 1)[1]
        report = replace(shifted(base, offset), cluster=HOSTILE, level=level, started_at=started,
                         finished_at=finished)
        write_reports(report, reports / folder)


def gemm_median(offset: float) -> float:
    values = sorted(c.value + offset for n in sample_report().nodes for c in n.checks if c.check == "gpu.gemm_bf16")
    return (values[3] + values[4]) / 2


def test_index_lists_every_run_newest_first_with_links_and_counts(tmp_path):
    write_runs(tmp_path)
    page = index.render(tmp_path)
    folders = re.findall(r'<tr class="run" data-run="([^"]+)"', page)
    assert folders == [r[0] for r in reversed(RUNS)]
    for folder, *_ in RUNS:
        assert f'<a href="{folder}/report.html">{folder}</a>' in page
    first_row = page[page.index('class="run" data-run="20260103T000000Z-full"'):
                     page.index('class="run" data-run="20260102T000000Z-quick"')]
    assert ">full<" in first_row and 'data-verdict="fail"' in first_row and ">7200 s<" in first_row
    counts = sample_report().counts()
    assert re.findall(r'<td class="num">(\d+)</td>', first_row)[:4] == [
        str(counts[v]) for v in ("pass", "warn", "fail", "na")]


def test_hostile_cluster_name_is_escaped_and_the_page_loads_nothing(tmp_path):
    write_runs(tmp_path)
    page = index.render(tmp_path)
    assert "<script" not in page and "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;&amp;&#34;" in page
    assert not re.search(r"(src|href)\s*=\s*\"(https?:)?//", page) and "http" not in page


def test_trend_points_follow_the_runs_oldest_first(tmp_path):
    write_runs(tmp_path)
    page = index.render(tmp_path)
    figure = page[page.index('<figure class="trend" data-key="gpu.gemm_bf16">'):]
    figure = figure[:figure.index("</figure>")]
    found = [(run, float(value)) for run, value in re.findall(r'data-run="([^"]+)" data-value="([^"]+)"', figure)]
    assert found == [(folder, gemm_median(offset)) for folder, _, _, offset in RUNS]
    ys = [float(y) for y in re.findall(r'cy="([0-9.]+)"', figure)]
    assert ys[2] > ys[0] > ys[1]  # SVG y grows downwards: the lowest median sits lowest
    walls = re.search(r'data-key="wall_s">.*?</figure>', page, re.S).group(0)
    assert [float(v) for v in re.findall(r'data-value="([^"]+)"', walls)] == [600.0, 90.0, 7200.0]


def test_a_figure_no_run_has_gets_no_trend(tmp_path):
    write_runs(tmp_path)
    page = index.render(tmp_path)
    assert 'data-key="nccl.cluster_busbw"' in page and 'data-key="nccl.node_busbw"' not in page


def test_unreadable_reports_are_left_out_with_a_note(tmp_path):
    write_runs(tmp_path)
    (tmp_path / "20260104T000000Z-quick").mkdir()
    (tmp_path / "20260104T000000Z-quick" / "report.json").write_text("{not json")
    (tmp_path / "20260105T000000Z-quick").mkdir()
    found = runs.read_runs(tmp_path)
    assert [r.folder for r in found.runs] == [r[0] for r in reversed(RUNS)]
    assert len(found.notes) == 2 and found.notes[0].startswith("20260104T000000Z-quick: report.json could not")
    assert "20260105T000000Z-quick: report.json could not be read" in index.render(tmp_path)


def test_an_old_report_without_the_new_header_fields_is_read(tmp_path):
    write_runs(tmp_path)
    path = tmp_path / RUNS[0][0] / "report.json"
    text = path.read_text().replace(f'"schema_version": "{json_report.SCHEMA_VERSION}"', '"schema_version": "1.0"')
    text = re.sub(r'\s*"scope": \{[^}]*\},', "", text)
    path.write_text(re.sub(r'\s*"(tool_version|spec_digest)": [^,]+,', "", text))
    assert '"scope"' not in path.read_text() and '"1.0"' in path.read_text()
    assert [r.folder for r in runs.read_runs(tmp_path).runs][-1] == RUNS[0][0]


def test_each_certify_run_rewrites_the_index(tmp_path):
    state = ClusterState(tmp_path, "c1")
    write_to_state(sample_report(), state, stamp="20260101T000000Z")
    first = (state.reports_dir / "index.html").read_text()
    later = replace(sample_report(), started_at="2026-02-01T00:00:00+00:00", finished_at="2026-02-01T00:05:00+00:00")
    write_to_state(later, state, stamp="20260201T000000Z")
    second = (state.reports_dir / "index.html").read_text()
    assert first.count('<tr class="run"') == 1
    assert re.findall(r'<tr class="run" data-run="([^"]+)"', second) == ["20260201T000000Z-standard",
                                                                        "20260101T000000Z-standard"]
