"""The spec's `monitoring:` section: Prometheus and Alertmanager on one node (the node with the `monitoring` role,
else the controller), node exporter on every node, DCGM's exporter on GPU nodes (README "Monitoring"), and Grafana with the shipped dashboards on the monitoring node where the spec
asks for it (from Grafana's APT repository: Debian has no Grafana package)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictBool, model_validator

from provision.spec.section import StrictModel
from provision.spec.shapes import AptComponent, AptSuite, Fingerprint, LocalPath, Url, shape_error

_RECEIVER = r"^[a-z][a-z0-9-]{0,30}$"


class Receiver(StrictModel):
    """Where Alertmanager sends the alerts: a webhook (Slack, PagerDuty and most chat tools take one). A URL that
    carries a token belongs in `url_file`, read on this machine and written only into Alertmanager's file."""

    name: str = Field(pattern=_RECEIVER, description="lower-case letters, digits and '-'")
    url: Url | None = Field(None, description="the webhook's URL (not a secret: it is in the inventory and the plan)")
    url_file: LocalPath | None = Field(None, description="a file on this machine holding the URL (a secret)")
    send_resolved: StrictBool = True

    @model_validator(mode="after")
    def _one_url(self) -> Receiver:
        if (self.url is None) == (self.url_file is None) or self.url == "":
            raise shape_error("needs exactly one of url and url_file",
                              "give url: for a plain webhook, or url_file: for a URL that holds a token")
        return self


class Grafana(StrictModel):
    """Grafana on the monitoring node, from Grafana's APT repository trusted with its signing key only, with
    Prometheus as its data source and the cluster's dashboards (cluster overview, node, GPU, queue) provisioned."""

    repository_url: Url = "https://apt.grafana.com"
    suite: AptSuite = "stable"
    components: list[AptComponent] = Field(default_factory=lambda: ["main"], min_length=1, max_length=16)
    key: LocalPath = Field(description="Grafana's signing key on this machine: an OpenPGP public key file, armored or "
                           "binary (https://apt.grafana.com/gpg.key)")
    key_fingerprint: Fingerprint = Field(description="the key's fingerprint (40 hex digits); apt then accepts only "
                                         "this key's signatures")
    port: int = Field(3000, ge=1024, le=65535)


class Monitoring(StrictModel):
    """Prometheus, Alertmanager and the exporters, on by default; `enabled: false` installs none of it."""

    enabled: StrictBool = True
    listen: Literal["cluster", "all"] = Field(
        "cluster", description="cluster: each service listens on its node's cluster address only; all: 0.0.0.0")
    prometheus_port: int = Field(9090, ge=1024, le=65535)
    alertmanager_port: int = Field(9093, ge=1024, le=65535)
    node_exporter_port: int = Field(9100, ge=1024, le=65535)
    dcgm_exporter_port: int = Field(9400, ge=1024, le=65535)
    scrape_interval_s: int = Field(15, ge=1, le=300, description="how often Prometheus scrapes every target")
    retention_days: int = Field(15, ge=1, le=3650, description="how long Prometheus keeps its series")
    slurm_interval_s: int = Field(30, ge=5, le=3600, description="how often the controller's Slurm collector runs")
    receivers: list[Receiver] = Field(default_factory=list, max_length=16,
                                      description="Alertmanager's receivers; none: alerts are only shown")
    grafana: Grafana | None = Field(None, description="Grafana with the dashboards on the monitoring node; none: the "
                                    "dashboards ship as JSON to import into your own Grafana")

    def ports(self) -> dict[str, int]:
        """Each service's port by the field that sets it."""
        ports = {"prometheus_port": self.prometheus_port, "alertmanager_port": self.alertmanager_port,
                 "node_exporter_port": self.node_exporter_port, "dcgm_exporter_port": self.dcgm_exporter_port}
        if self.grafana is not None:
            ports["grafana.port"] = self.grafana.port
        return ports
