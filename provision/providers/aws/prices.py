"""The dated price table shipped with the package, for `provision plan`'s hourly estimate."""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from provision.providers.aws.config import FsxLustre

HOURS_PER_MONTH = 730  # AWS converts monthly storage prices with 730 hours


@dataclass(frozen=True)
class PriceTable:
    """On-demand list prices of one region on one date."""

    date: str
    region: str
    source: str
    instance_hourly: dict[str, float]
    gp3_gib_month: float
    fsx_gib_month: dict[str, float]

    def instance(self, instance_type: str) -> float | None:
        """Hourly on-demand price of one instance, or None when the table lacks the type."""
        return self.instance_hourly.get(instance_type)

    def volumes(self, count: int, gib: int) -> float:
        """Hourly price of `count` gp3 volumes of `gib` each (baseline IOPS and throughput)."""
        return count * gib * self.gp3_gib_month / HOURS_PER_MONTH

    def fsx(self, config: FsxLustre) -> float | None:
        """Hourly price of an FSx for Lustre file system."""
        key = config.deployment_type if config.deployment_type == "SCRATCH_2" else \
            f"{config.deployment_type}/{config.per_unit_storage_throughput}"
        per_gib = self.fsx_gib_month.get(key)
        return None if per_gib is None else config.storage_capacity_gib * per_gib / HOURS_PER_MONTH


@lru_cache(maxsize=1)
def table() -> PriceTable:
    """Load prices.json from the installed package."""
    data = json.loads((resources.files(__package__) / "prices.json").read_text())
    return PriceTable(date=data["date"], region=data["region"], source=data["source"],
                      instance_hourly=data["instance_hourly"], gp3_gib_month=data["ebs_gp3_gib_month"],
                      fsx_gib_month=data["fsx_lustre_gib_month"])
