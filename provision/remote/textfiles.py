"""Replace one of gpu-provision's textfiles in node exporter's directory on a node, from the control side.

Certify's and deploy's last results are series of the catalogue (provision.certify.probe.metrics.catalogue), written
as one file each (TEXTFILES) into TEXTFILE_DIR on the monitoring node, where node exporter serves them to Prometheus.
One SSH command per file, whatever the cluster's size: the file's text travels on the command's input, is written to
a hidden temporary file in the same directory (node exporter reads only `*.prom`), made 0644 and renamed over the
old file, so Prometheus never scrapes half a file.

The exposition text is rendered here by a small private renderer (`_render`); it gives way to the textfile module of
the metrics package (its `render`) once that is in.
"""
from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from provision.certify.probe.metrics.catalogue import OURS, TEXTFILE_DIR, TEXTFILES
from provision.errors import ProvisionError
from provision.records import ClusterInfo, NodeInfo
from provision.remote.commands import CommandResult, run_on

WRITE_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Sample:
    """One series' value: a name of the catalogue, exactly its labels, a number."""

    name: str
    value: float
    labels: Mapping[str, str] = field(default_factory=dict)


StdinRunner = Callable[..., CommandResult]  # run_on's shape: (cluster, node, command, timeout=, stdin=)


def write_command(writer: str, sudo: bool, folder: str = TEXTFILE_DIR) -> str:
    """The shell line that reads a file's text on stdin and puts it in place as TEXTFILES[writer], atomically."""
    folder, name = shlex.quote(folder), shlex.quote(TEXTFILES[writer])
    script = (f"set -e; umask 022; t=$(mktemp {folder}/.{name}.XXXXXX); trap 'rm -f \"$t\"' EXIT; cat > \"$t\"; "
              f"chmod 0644 \"$t\"; mv -f \"$t\" {folder}/{name}; trap - EXIT")
    return ("sudo -n " if sudo else "") + "sh -c " + shlex.quote(script)


def publish(cluster: ClusterInfo, node: NodeInfo, writer: str, samples: Sequence[Sample],
            run: StdinRunner = run_on) -> str | None:
    """Write the samples as TEXTFILES[writer] on `node` with one remote command; None when written, else why not
    (one line naming the node). Never raises for the node: a file not written is a note, not a failure."""
    text = _render(samples).encode()
    try:
        result = run(cluster, node, write_command(writer, cluster.ssh_user != "root"), timeout=WRITE_TIMEOUT_S,
                     stdin=text)
    except ProvisionError as exc:
        return f"{TEXTFILES[writer]} not written on {node.name}: {str(exc).removeprefix(node.name + ': ')}"
    except Exception as exc:  # the run it reports on is over: whatever stops the write is a note
        return f"{TEXTFILES[writer]} not written on {node.name}: {exc.__class__.__name__}: {exc}"
    if result.rc != 0:
        why = (result.stderr.strip().splitlines() or [f"exit {result.rc}"])[-1]
        return f"{TEXTFILES[writer]} not written on {node.name}: {why}"
    return None


def _render(samples: Sequence[Sample]) -> str:
    """The exposition text: per name, in the order names first come, its HELP and TYPE lines, then its samples."""
    by_name: dict[str, list[Sample]] = {}
    for sample in samples:
        _refuse_unknown(sample)
        by_name.setdefault(sample.name, []).append(sample)
    lines = []
    for name, group in by_name.items():
        metric = OURS[name]
        lines += [f"# HELP {name} {_escape_help(metric.help)}", f"# TYPE {name} {metric.kind}"]
        lines += [f"{name}{_labels(s.labels)} {_number(s.value)}" for s in group]
    return "".join(line + "\n" for line in lines)


def _refuse_unknown(sample: Sample) -> None:
    """A name that is not the catalogue's, or labels other than its own, is a bug of the writer."""
    metric = OURS.get(sample.name)
    if metric is None or set(sample.labels) != set(metric.labels):
        raise ValueError(f"{sample.name}{sorted(sample.labels)}: not a series of the catalogue with these labels")


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(str(value))}"' for key, value in sorted(labels.items())) + "}"


def _escape(value: str) -> str:
    """A label value as the format writes it: backslash, double quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _number(value: float) -> str:
    """Integers without a decimal point; NaN and infinities as the format spells them."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return str(int(value)) if float(value).is_integer() else repr(float(value))
