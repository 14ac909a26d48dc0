"""Node exporter's textfile format: samples of the catalogue's series, rendered and written in one step.

Render: the Prometheus text exposition format (version 0.0.4), one HELP and one TYPE line per series name from the
catalogue, then its samples; names and label sets are checked against the catalogue (ValueError on a name or a label
that is not there, or on the same series twice: node exporter would reject the whole file). Output is sorted, so the
same samples give the same bytes. Label values come from Slurm drain reasons, user names and check subjects: any
text is allowed, backslash, double quote and line feed are escaped as the format wants.

Write: a temporary file in the same directory (its name does not end in .prom, so node exporter never reads it),
mode 0644, then os.replace over the textfile: a scrape sees the old file or the new one, never a part. A missing
directory is an OSError that says so (node exporter is not installed, or its directory is elsewhere); the caller
decides what that means (the node health program notes it in its record, the Slurm collector exits 1).
"""
from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from provision.certify.probe.metrics.catalogue import OURS, Metric

MODE = 0o644


@dataclass(frozen=True)
class Sample:
    """One value of one series: the name, its labels in the catalogue's order, the value."""

    name: str
    labels: tuple[tuple[str, str], ...]
    value: float


def sample(name: str, value: float, **labels: str) -> Sample:
    """A sample of a catalogue series; ValueError when the name or the label set is not the catalogue's."""
    metric = OURS.get(name)
    if metric is None:
        raise ValueError(f"metric '{name}' is not in the catalogue (provision/certify/probe/metrics/catalogue.py)")
    if set(labels) != set(metric.labels):
        raise ValueError(f"metric '{name}': labels {sorted(labels)} are not the catalogue's {sorted(metric.labels)}")
    return Sample(name, tuple((key, str(labels[key])) for key in metric.labels), float(value))


def escape_label(value: str) -> str:
    """A label value as the format writes it between double quotes (a lone surrogate, which UTF-8 cannot hold, becomes "?")."""
    text = value.encode("utf-8", "replace").decode("utf-8")
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A HELP line's text: backslash and line feed escaped."""
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    """A sample value: integers without a fraction, NaN and the infinities as the format spells them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


def _line(item: Sample) -> str:
    labels = ",".join(f'{key}="{escape_label(value)}"' for key, value in item.labels)
    return f"{item.name}{{{labels}}} {format_value(item.value)}" if labels else \
        f"{item.name} {format_value(item.value)}"


def _checked(samples: list[Sample]) -> dict[str, list[Sample]]:
    """Samples by series name, each checked against the catalogue; ValueError on a series given twice."""
    by_name: dict[str, list[Sample]] = {}
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for item in samples:
        metric = OURS.get(item.name)
        if metric is None or tuple(key for key, _ in item.labels) != metric.labels:
            raise ValueError(f"sample {item.name}{dict(item.labels)} does not match the catalogue")
        if (item.name, item.labels) in seen:
            raise ValueError(f"sample {item.name}{dict(item.labels)} is given twice")
        seen.add((item.name, item.labels))
        by_name.setdefault(item.name, []).append(item)
    return by_name


def _block(metric: Metric, items: list[Sample]) -> list[str]:
    head = [f"# HELP {metric.name} {escape_help(metric.help)}", f"# TYPE {metric.name} {metric.kind}"]
    return head + [_line(item) for item in sorted(items, key=lambda s: s.labels)]


def render(samples: list[Sample]) -> str:
    """The text of a textfile holding the samples, sorted by series name and labels."""
    by_name = _checked(samples)
    lines = [line for name in sorted(by_name) for line in _block(OURS[name], by_name[name])]
    return "".join(line + "\n" for line in lines)


def write(directory: Path, filename: str, samples: list[Sample]) -> Path:
    """Replace directory/filename with the samples in one step; OSError (the directory missing, not writable)."""
    text = render(samples)  # a ValueError leaves the old file in place
    if not directory.is_dir():
        missing = "is not a directory" if directory.exists() else "does not exist"
        raise FileNotFoundError(2, f"{directory} {missing} (node exporter's textfile directory; is "
                                "prometheus-node-exporter installed?)", str(directory))
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{filename}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            os.fchmod(out.fileno(), MODE)
            out.write(text)
        target = directory / filename
        os.replace(temporary, target)
    except BaseException:
        _remove(temporary)
        raise
    return target


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
