"""Certify's series kept in the cluster's state (the document DOCUMENT): what certify's textfile is rendered from
(provision.certify.report.metrics), so that a partial run adds to it instead of being left out.

A whole run replaces everything: the cluster's verdict and time, and every node's series. A partial run (a grow,
`certify --release`, a rolling batch) replaces the series of the nodes it judged (the controller and its nodes, never
the peers it measured them against: RunScope) and keeps the others' and the cluster's, which stay the last whole
run's: a partial run is not the cluster's verdict. Nodes no longer in the cluster are dropped.

The series are kept as data (name, labels, value), as certify.report.metrics built them; a series the catalogue no
longer has is dropped when read.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from provision.certify.probe.metrics.textfile import Sample, sample
from provision.certify.records import ClusterReport, NodeResult
from provision.records import ClusterInfo
from provision.state import ClusterState

DOCUMENT = "certify_nodes"  # {"cluster": [series], "nodes": {node: [series]}}, a series {"name", "labels", "value"}

NodeSamples = Callable[[NodeResult], list[Sample]]


@dataclass(frozen=True)
class CertifySeries:
    """The series certify's file holds: the cluster's (the last whole run's; none before one), then per node its
    last judged run's."""

    cluster: tuple[Sample, ...] = ()
    nodes: dict[str, tuple[Sample, ...]] = field(default_factory=dict)

    def samples(self) -> list[Sample]:
        """Every series, the cluster's first, then node by node."""
        return [*self.cluster, *(s for series in self.nodes.values() for s in series)]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict for JSON."""
        return {"cluster": [_to_dict(s) for s in self.cluster],
                "nodes": {node: [_to_dict(s) for s in series] for node, series in self.nodes.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> CertifySeries:
        """Rebuild from `to_dict` output; what is not a series of the catalogue is skipped."""
        data = data if isinstance(data, Mapping) else {}
        nodes = data.get("nodes") if isinstance(data.get("nodes"), Mapping) else {}
        return cls(_samples(data.get("cluster")), {str(node): _samples(series) for node, series in nodes.items()})


def merged(known: CertifySeries, report: ClusterReport, cluster_samples: list[Sample],
           node_samples: NodeSamples) -> CertifySeries:
    """The known series with the report's: all of them for a whole run, its judged nodes' for a partial one."""
    judged = {n.name: tuple(node_samples(n)) for n in report.nodes if n.name not in report.scope.peers}
    if not report.scope.partial:
        return CertifySeries(tuple(cluster_samples), judged)
    return CertifySeries(known.cluster, {**known.nodes, **judged})


def in_cluster(series: CertifySeries, cluster: ClusterInfo) -> CertifySeries:
    """Only the nodes the cluster has now, in the cluster's order."""
    return CertifySeries(series.cluster, {n.name: series.nodes[n.name] for n in cluster.nodes if n.name in series.nodes})


def record(state: ClusterState, cluster: ClusterInfo, report: ClusterReport, cluster_samples: list[Sample],
           node_samples: NodeSamples) -> CertifySeries:
    """Merge a run into the recorded series and write them back (0600); the merged series."""
    series = in_cluster(merged(CertifySeries.from_dict(state.read(DOCUMENT)), report, cluster_samples, node_samples),
                        cluster)
    state.write(DOCUMENT, series.to_dict())
    return series


def _to_dict(item: Sample) -> dict[str, Any]:
    return {"name": item.name, "labels": dict(item.labels), "value": item.value}


def _samples(data: Any) -> tuple[Sample, ...]:
    """The series of a list as `_to_dict` wrote them; one that is not a series of the catalogue is skipped."""
    found = []
    for entry in data if isinstance(data, list) else []:
        try:
            found.append(sample(str(entry["name"]), float(entry["value"]),
                                **{str(k): str(v) for k, v in dict(entry["labels"]).items()}))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(found)
